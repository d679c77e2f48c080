"""One exception hierarchy: callers catch ``UnikoError`` and branch on the subclass."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence


class UnikoError(Exception):
    """Base of every error uniko-memory raises on purpose."""

    kind: str = "uniko"


class ConfigError(UnikoError, ValueError):
    """A configuration value is invalid or inconsistent."""

    kind = "config"


class ValidationError(UnikoError, ValueError):
    """Input data (a turn, a node, a query, a vector) is malformed."""

    kind = "validation"


class IdConflict(UnikoError):
    """The same id was written twice with different content."""

    kind = "id_conflict"


class Backpressure(UnikoError):
    """A bounded queue is full; retry later or submit with ``wait=True``."""

    kind = "backpressure"


class MissingDependency(UnikoError, ImportError):
    """An optional extra is not installed; the message names the extra to install."""

    kind = "missing_dependency"

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"the optional package {package!r} is needed{what}; install it with "
            f"`pip install 'uniko-memory[{extra}]'`"
        )
        self.package = package
        self.extra = extra


class StoreError(UnikoError):
    """The storage backend failed or refused an operation."""

    kind = "store"


class StoreLocked(StoreError):
    """The embedded store is open for writing already (in another process, or by an open in this
    one that is not closed: the message says which), or another connection holds its write lock.
    A reader opens it beside the writer with ``store.embedded_read_only``."""

    kind = "store_locked"


class StorageFull(StoreError):
    """The disk (or quota) holding the store is full; the failed write was rolled back."""

    kind = "storage_full"


class StoreReadOnly(StoreError):
    """The store cannot be written (file or directory permissions, a read-only mount)."""

    kind = "store_read_only"


class SchemaMismatch(StoreError):
    """The store was created with a different schema version or embedding model."""

    kind = "schema_mismatch"


class UnknownTier(ValidationError):
    """A tier name that the data model does not define."""

    kind = "unknown_tier"


class FilterError(ValidationError):
    """A filter expression is malformed (unknown operator, bad field name, bad value)."""

    kind = "filter"


class NotFound(UnikoError, KeyError):
    """A node, session or participant that must exist does not."""

    kind = "not_found"

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class ProviderError(UnikoError):
    """An embedder, reranker or chat model failed."""

    kind = "provider"


class CircuitOpen(ProviderError):
    """The circuit breaker is open: calls are refused until the recovery window passes."""

    kind = "circuit_open"


class ClosedError(UnikoError):
    """The handle (store, knowledge base, facade) has been closed."""

    kind = "closed"


#: Names other memory libraries (mem0, LangChain, LlamaIndex, Zep) give a parameter, and the
#: parameter uniko calls it, in order of preference: the first one the model has is suggested.
WELL_KNOWN_ALIASES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("top_k", "k", "n", "n_results", "num_results", "max_results", "similarity_top_k", "max_items"),
        ("limit",),
    ),
    **dict.fromkeys(
        ("budget", "max_tokens", "token_limit", "tokens", "max_context_tokens", "context_budget"),
        ("token_budget",),
    ),
    **dict.fromkeys(("user_id", "user"), ("sender", "viewer")),
    **dict.fromkeys(("role", "speaker", "author", "from_", "speaker_id"), ("sender",)),
    **dict.fromkeys(("name", "speaker_name", "display_name"), ("sender_name",)),
    **dict.fromkeys(("text", "message", "body", "msg"), ("content",)),
    **dict.fromkeys(("timestamp", "created_at", "time", "date", "ts"), ("at",)),
    **dict.fromkeys(("to", "recipient", "recipients"), ("addressed_to",)),
    **dict.fromkeys(("run_id", "session_id", "session", "thread_id"), ("sessions",)),
    **dict.fromkeys(("speakers", "users", "user_ids"), ("participants",)),
    **dict.fromkeys(
        ("threshold", "score_threshold", "similarity_threshold", "min_relevance"), ("min_score",)
    ),
    **dict.fromkeys(("start", "after", "from_date"), ("since",)),
    **dict.fromkeys(("end", "before", "to_date"), ("until",)),
}

#: What a suggested parameter holds, where the name alone may not say it.
_MEANING = {
    "limit": "the most items",
    "token_budget": "the tokens bundle.render() may take",
    "sender": "who said it",
    "viewer": "who the recall is for: viewer=Viewer(participant_id=...); docs/scoping.md",
    "sessions": "a list of session ids",
    "participants": "a list of participant ids",
}

#: Names that are no parameter of the model but are chosen elsewhere.
_CHOSEN_ELSEWHERE = {
    "agent_id": "the agent is chosen by uni.agent(agent_id) (docs/scoping.md)",
    "session_id": "the session is chosen by agent.session(session_id)",
    "run_id": "the session is chosen by agent.session(run_id) (docs/scoping.md)",
    "session": "the session is chosen by agent.session(session_id)",
    "thread_id": "the session is chosen by agent.session(thread_id)",
    "filters": "scope a recall with sessions=, participants=, since=, until=, categories=, viewer=",
    "filter": "scope a recall with sessions=, participants=, since=, until=, categories=, viewer=",
}


def suggest_argument(name: str, known: Collection[str]) -> list[str]:
    """The parameters ``name`` probably meant: a well-known alias first, then close spellings."""
    out = [t for t in WELL_KNOWN_ALIASES.get(name.lower(), ()) if t in known][:1]
    if out or name in _CHOSEN_ELSEWHERE:
        return out
    return difflib.get_close_matches(name, sorted(known), n=2, cutoff=0.7)


def _hint(name: str, known: Collection[str]) -> str:
    hits = suggest_argument(name, known)
    if hits:
        said = " or ".join(f"{h!r}" + (f" ({_MEANING[h]})" if h in _MEANING else "") for h in hits)
        return f"did you mean {said}?"
    return _CHOSEN_ELSEWHERE.get(name, "")


def unknown_arguments_message(owner: str, unknown: Sequence[str], known: Collection[str]) -> str:
    """``unknown argument 'top_k' for RecallConfig; did you mean 'limit' (the most items)?``; the
    valid names are listed when some name has no likely meaning."""
    hints = {name: _hint(name, known) for name in unknown}
    if len(unknown) == 1:
        name = unknown[0]
        text = f"unknown argument {name!r} for {owner}" + (f"; {hints[name]}" if hints[name] else "")
    else:
        parts = [f"{n!r}" + (f" ({hints[n]})" if hints[n] else "") for n in unknown]
        text = f"unknown arguments for {owner}: {', '.join(parts)}"
    if not all(hints.values()):
        text += f"; its arguments are {', '.join(sorted(known))}"
    return text


def refuse_unknown_arguments(owner: str, data: object, known: Collection[str]) -> None:
    """Raise ``ValueError`` naming the right parameter for every key of ``data`` (a mapping of
    arguments) that is not in ``known``; the one check behind every ``extra="forbid"`` model a
    caller builds from keywords (``Turn``, ``RecallConfig``, ``UnikoConfig`` and its groups)."""
    if not isinstance(data, Mapping):
        return
    unknown = [str(k) for k in data if k not in known]
    if unknown:
        raise ValueError(unknown_arguments_message(owner, unknown, known))
