"""LangGraph namespaces ↔ uniko session and turn ids, and LangGraph's namespace rules.

A namespace names one session of the store's agent: its labels joined by ``/``, where a label's
own ``%`` and ``/`` (and a label made only of blanks) are written as ``%XX`` escapes, so
``("memories", "alice/home")`` → ``"memories/alice%2Fhome"`` and ``("memories", "alice", "home")``
→ ``"memories/alice/home"`` stay apart. A key's turn id is derived from its namespace and key
(``turn_base``), later versions adding ``#<n>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)

__all__ = [
    "Namespace",
    "check_labels",
    "check_op",
    "is_version",
    "namespace_of",
    "ns_matches",
    "session_of",
    "turn_base",
]

#: Turn ids are at most 256 characters; a longer base (before ``#<version>``) is hashed.
_MAX_TURN_BASE = 240

Namespace = tuple[str, ...]


def _pct(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def _escape(label: str, special: str) -> str:
    """``label`` with ``special`` characters (and surrogates) as ``%XX``; a blank label wholly."""
    if not label.strip():
        return "".join(_pct(ch) for ch in label)
    return "".join(_pct(ch) if ch in special or "\ud800" <= ch <= "\udfff" else ch for ch in label)


_ESCAPES = re.compile(r"(?:%[0-9A-F]{2})+")


def _unescape(text: str) -> str | None:
    try:
        return _ESCAPES.sub(
            lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "surrogatepass"), text
        )
    except UnicodeDecodeError:
        return None


def session_of(namespace: Namespace) -> str:
    return "/".join(_escape(label, "%/") for label in namespace)


def namespace_of(session: str) -> Namespace | None:
    labels = [_unescape(part) for part in session.split("/")]
    if not all(labels):
        return None
    namespace = tuple(label for label in labels if label)
    return namespace if session_of(namespace) == session else None


def turn_base(namespace: Namespace, key: str) -> str:
    """The turn id of a key's first version (later ones add ``#<n>``), unique in the agent.

    Plain names keep the form of earlier versions (``lg:<labels joined by />:<key>``), so stores
    written by them continue their version numbers. Others escape, under another prefix, what would
    make the id ambiguous; an id over the length limit is a hash of the namespace and key.
    """
    plain = all(":" not in label and _escape(label, "%/") == label for label in namespace)
    if plain and ":" not in key and "#" not in key:
        base = f"lg:{'/'.join(namespace)}:{key}"
    else:
        escaped = "/".join(_escape(label, "%/:") for label in namespace)
        base = f"lgx:{escaped}:{_escape(key, '%:#') if key else ''}"
    if len(base) > _MAX_TURN_BASE:
        digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8", "surrogatepass"))
        base = f"lgh:{digest.hexdigest()}"
    return base


def is_version(turn_id: str, base: str) -> bool:
    return turn_id == base or (turn_id.startswith(base + "#") and turn_id[len(base) + 1 :].isdigit())


def check_labels(namespace: Sequence[Any], *, put: bool = False) -> None:
    """LangGraph's namespace rules, also for ops handed to ``batch`` directly."""
    if put and not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}: labels must be strings, "
                f"not {type(label).__name__}."
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}: labels must be non-empty "
                "and cannot contain periods ('.') or NUL bytes."
            )
    if put and namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')


def check_op(op: Op) -> None:
    if isinstance(op, PutOp):
        check_labels(op.namespace, put=op.value is not None)  # a delete may name any namespace
    elif isinstance(op, GetOp):
        check_labels(op.namespace)
    elif isinstance(op, SearchOp):
        check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_labels(condition.path)


def ns_matches(ns: Namespace, cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
