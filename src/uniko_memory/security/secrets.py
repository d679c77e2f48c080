"""``SecretScanner``: find secrets in text and replace each with a stable ``[REDACTED:kind]`` marker.

Masking happens before a turn is stored, so the store, the indexes, the embedder (possibly a remote
API) and the logs only ever see the marker. Results carry kinds and offsets, never the secret,
so they are safe to log. Redaction is idempotent: masking masked text changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import ValidationError
from .normalise import normalised_view, visible_key
from .patterns import (
    PASSWORD_KEY,
    PIN_KEY,
    PIN_VALUE,
    RULES,
    Rule,
    card_spans,
    check_extra_patterns,
    looks_random,
    password_value,
    secret_key_name,
)

__all__ = [
    "Finding",
    "RedactionResult",
    "SecretScanner",
    "describe",
    "marker",
    "redact_secrets",
    "scanner_for",
]


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Finding:
    """One masked secret: its kind and where it was in the original text (never its value)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class RedactionResult:
    """The masked text and what was masked."""

    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.findings)

    @property
    def counts(self) -> Counter[str]:
        """How many secrets of each kind were masked."""
        return Counter(f.kind for f in self.findings)


@dataclass(frozen=True)
class SecretScanner:
    """The built-in rules plus optional user regexes (kind ``custom``; a group ``secret`` masks only it)."""

    extra_patterns: tuple[str, ...] = ()
    _extra: tuple[Rule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_extra_patterns(list(self.extra_patterns))
        extra = []
        for p in self.extra_patterns:
            compiled = re.compile(p)
            groups = ("secret",) if "secret" in compiled.groupindex else ()
            extra.append(Rule("custom", compiled, groups))
        object.__setattr__(self, "_extra", tuple(extra))

    def _candidates(self, text: str) -> list[tuple[int, int, int, int, str]]:
        """``(start, -length, priority, end, kind)`` for every rule's match in ``text``."""
        candidates: list[tuple[int, int, int, int, str]] = []
        for priority, rule in enumerate((*RULES, *self._extra)):
            for start, end in rule.spans(text):
                candidates.append((start, start - end, priority, end, rule.kind))
        last = len(RULES) + len(self._extra)
        candidates += [(s, s - e, last, e, "credit_card") for s, e in card_spans(text)]
        return candidates

    def scan(self, text: str) -> list[Finding]:
        """Non-overlapping findings in text order; overlapping claims merge so nothing leaks.

        The rules read the text as given and its normalised view (``normalise.py``: NFKC per
        character, invisible characters dropped); a finding in the view is mapped back onto the
        original characters it came from. The view only adds findings: what the text as given
        shows is found either way.
        """
        candidates = self._candidates(text)
        view = normalised_view(text)
        if view.changed:
            for start, _, priority, end, kind in self._candidates(view.text):
                s, e = view.span(start, end)
                candidates.append((s, s - e, priority, e, kind))
        candidates.sort()
        out: list[Finding] = []
        for start, _, _, end, kind in candidates:
            if out and start < out[-1].end:
                if end > out[-1].end:  # a partial overlap: widen the earlier finding over both
                    out[-1] = Finding(out[-1].kind, out[-1].start, end)
                continue
            out.append(Finding(kind, start, end))
        return out

    def redact(self, text: str) -> RedactionResult:
        findings = self.scan(text)
        if not findings:
            return RedactionResult(text)
        parts: list[str] = []
        pos = 0
        for f in findings:
            parts += [text[pos : f.start], marker(f.kind)]
            pos = f.end
        parts.append(text[pos:])
        return RedactionResult("".join(parts), tuple(findings))

    def redact_optional(self, text: str | None) -> RedactionResult | None:
        """``redact`` for an optional field (None stays None)."""
        return None if text is None else self.redact(text)

    def redact_data(self, value: Any, key: str | None = None) -> tuple[Any, Counter[str]]:
        """Mask every string inside dicts/lists/tuples, keys included; a secret-named key masks its
        whole value. A key that masks like one before it is kept apart by a `` (2)``, `` (3)``… suffix."""
        counts: Counter[str] = Counter()
        if isinstance(value, str):
            kind = _key_kind(key, value)
            if kind is not None:
                counts[kind] += 1
                return marker(kind), counts
            result = self.redact(value)
            return result.text, result.counts
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                name = k
                if isinstance(k, str):
                    masked_key = self.redact(k)
                    counts += masked_key.counts
                    name = _unique(masked_key.text, out)
                out[name], found = self.redact_data(v, k if isinstance(k, str) else None)
                counts += found
            return out, counts
        if isinstance(value, list | tuple):
            items = []
            for v in value:
                masked, found = self.redact_data(v, key)
                items.append(masked)
                counts += found
            return (items if isinstance(value, list) else tuple(items)), counts
        return value, counts

    def check_ids(self, ids: Mapping[str, str | None], label: str) -> None:
        """Refuse identity fields that hold a secret: a ``ValidationError`` naming the field and the
        kinds, never the value.

        An id is stored as given and says which turn, session, participant or artifact something
        is (replays, forgetting and scoping find it by it), so a secret cannot be masked out of it
        without making it another id. A card-like number that *is* the whole id is taken for a
        numeric id, not a card, and ``secret_patterns_extra`` apply to text only: they often name
        things (employee or badge numbers) that are ids by design.
        """
        for name, value in ids.items():
            if not value:
                continue
            stripped = value.strip()
            kinds = sorted(
                {
                    f.kind
                    for f in self.scan(value)
                    if f.kind != "custom"
                    and not (f.kind == "credit_card" and value[f.start : f.end] == stripped)
                }
            )
            if kinds:
                raise ValidationError(
                    f"{label} has what looks like a secret ({', '.join(kinds)}) in its {name}; an id is "
                    "stored as given and used for identity and replay, so it cannot be masked: use an "
                    "opaque id (a hash of it, say), or switch masking off (IngestConfig.redact_secrets)"
                )


def _unique(name: str, taken: Mapping[Any, Any]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name} ({n})" in taken:
        n += 1
    return f"{name} ({n})"


def _key_kind(key: str | None, value: str) -> str | None:
    """The kind to mask a metadata value as because of its key (``{"password": "..."}``), if any.

    Key and value are read in their normalised view, as the rules read text."""
    if key is None:
        return None
    key = visible_key(key)
    plain = normalised_view(value).text.strip()
    if PASSWORD_KEY.fullmatch(key) and password_value(plain, key):
        return "password"
    if secret_key_name(key) and looks_random(plain):
        return "generic_secret"
    if PIN_KEY.fullmatch(key) and PIN_VALUE.fullmatch(plain):
        return "pin"
    return None


@lru_cache(maxsize=16)
def scanner_for(extra_patterns: tuple[str, ...] = ()) -> SecretScanner:
    """A shared scanner per pattern set: the regexes compile once per process."""
    return SecretScanner(extra_patterns)


def redact_secrets(text: str, extra_patterns: Iterable[str] = ()) -> RedactionResult:
    """Mask the secrets in ``text`` with the built-in rules (plus ``extra_patterns``)."""
    return scanner_for(tuple(extra_patterns)).redact(text)


def describe(counts: Mapping[str, int]) -> str:
    """``"aws_access_key=1, password=2"``: safe to log (kinds and counts only)."""
    return ", ".join(f"{kind}={n}" for kind, n in sorted(counts.items()))
