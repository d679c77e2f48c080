"""Reading a cycle's input: unprocessed observations, their triples, and the prior open Facts."""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..model import Direction, EdgeType, Fact, Observation, Tier
from ..store.filters import In, IsNull, Range
from ..store.protocol import Store
from .plan import Group, Vote
from .slot_lexicon import CANCEL_PREDICATES
from .slots import Statement, cessation_head, change_cue, read_slots
from .triples import RuleTripleSource, TripleSource, normalize_predicate, rule_triple

log = logging.getLogger(__name__)

#: Observations whose PROCESSED edges are checked per store call.
SCAN_PAGE = 5_000
#: An observation may be committed this long after it was created (a slow post-ingest batch,
#: another process's clock): a wide scan restarts that far before the previous scan, so nothing
#: committed late is skipped ...
SCAN_SLACK = timedelta(minutes=15)
#: ... and runs at least this often; the scans between restart only ``NARROW_SLACK`` before the
#: previous one. Every scan re-reads (decodes, checks for PROCESSED edges) what was created in
#: its window: a 10-minute window at every cycle re-read ~27,000 observations a cycle in a
#: sustained import and halved its rate. An observation committed up to SCAN_SLACK - WIDE_EVERY
#: (10 minutes) late is still found, by the next wide scan.
WIDE_EVERY = timedelta(minutes=5)
#: How late a commit in this process can be (one post-ingest batch): the narrow scans' window.
NARROW_SLACK = timedelta(minutes=1)


async def load_unprocessed(
    store: Store, agent: str, limit: int, *, since: datetime | None = None
) -> list[Observation]:
    """Observations with a full triple, or a subject, predicate and a date or a cancellation (an
    event's date is its value: ``slots``), and no inbound PROCESSED edge, oldest evidence first.

    ``since`` (a creation-time lower bound) narrows the scan; the PROCESSED edges stay the truth.
    """
    cancels = In("predicate", tuple(sorted(CANCEL_PREDICATES)))
    flt = ~IsNull("subject") & ~IsNull("predicate") & (~IsNull("object") | ~IsNull("anchor_lo") | cancels)
    if since is not None:
        flt = flt & Range("created_at", gte=since)
    found = await store.find(agent, Tier.OBSERVATION, flt, limit=1_000_000, order_by="time")
    candidates = [o for o in found if isinstance(o, Observation) and _votable(o)]
    out: list[Observation] = []
    for i in range(0, len(candidates), SCAN_PAGE):
        page = candidates[i : i + SCAN_PAGE]
        done = {
            e.dst
            for e in await store.neighbors(agent, [o.id for o in page], [EdgeType.PROCESSED], Direction.IN)
        }
        out.extend(o for o in page if o.id not in done)
        if len(out) >= limit:
            break
    return out[:limit]


def _votable(obs: Observation) -> bool:
    """A full triple, or an event's date or cancellation (their value stands in for the object)."""
    if rule_triple(obs) is not None:
        return True
    return bool(
        obs.subject and obs.predicate and (obs.anchor_lo is not None or obs.predicate in CANCEL_PREDICATES)
    )


@dataclass(frozen=True)
class ScanHint:
    """Where the next scan may start: ``since`` (None: scan everything) and whether it is wide."""

    since: datetime | None
    wide: bool


@dataclass(frozen=True)
class _Scanned:
    #: When the last scan that held the whole backlog started.
    start: datetime
    #: When the last wide (or full) scan started.
    wide_at: datetime


#: store → agent → the last complete scans (this process's view).
_SCANNED: weakref.WeakKeyDictionary[Any, dict[str, _Scanned]] = weakref.WeakKeyDictionary()


def scan_hint(store: Store, agent: str, now: datetime) -> ScanHint:
    """Where a scan starting ``now`` may begin: everything the first time, ``SCAN_SLACK`` before
    the previous scan once ``WIDE_EVERY`` has passed since the last wide one, else
    ``NARROW_SLACK`` before it."""
    try:
        last = _SCANNED.get(store, {}).get(agent)
    except TypeError:  # a store that cannot be weakly referenced: always scan everything
        last = None
    if last is None:
        return ScanHint(None, True)
    if now - last.wide_at >= WIDE_EVERY:
        return ScanHint(last.start - SCAN_SLACK, True)
    return ScanHint(last.start - NARROW_SLACK, False)


def set_scan_hint(store: Store, agent: str, scan_start: datetime, hint: ScanHint) -> None:
    """The scan that started at ``scan_start`` from ``hint`` held the whole backlog."""
    with contextlib.suppress(TypeError):
        known = _SCANNED.setdefault(store, {})
        last = known.get(agent)
        wide_at = scan_start if hint.wide or last is None else last.wide_at
        known[agent] = _Scanned(scan_start, wide_at)


async def votes_for(source: TripleSource | None, observations: Sequence[Observation]) -> list[Vote]:
    rules = RuleTripleSource()
    try:
        found = await (source or rules).triples(observations)
    except Exception as exc:  # a broken source never stops consolidation
        log.warning("triple source failed (%r); using the rule triples", exc)
        found = await rules.triples(observations)
    votes = []
    for o in observations:
        t = found.get(o.id, rule_triple(o))
        if t is None:
            # An event's date is its value: "the visit moved to 19 July" has no object, yet it
            # says when the visit is (``slots``); the date's words stand in for the object.
            event = [r for r in read_slots(o, o.subject or "", o.predicate or "", None) if r.object]
            if not event or not o.subject or not o.predicate:
                continue
            t = (o.subject, o.predicate, event[0].object or "")
        s, p, obj = (x.strip() for x in t)
        pred = normalize_predicate(p)
        if s and pred and obj:
            slots = tuple(read_slots(o, s, pred, obj))
            stmt = Statement(o, s, pred, obj)
            votes.append(
                Vote(o, s, pred, obj, slots=slots, stopped=cessation_head(stmt), change_cue=change_cue(stmt))
            )
    return votes


async def prior_open_facts(
    store: Store, agent: str, groups: Sequence[Group]
) -> dict[tuple[str, str, str], list[Fact]]:
    out: dict[tuple[str, str, str], list[Fact]] = defaultdict(list)
    keys = sorted({g.subject_key for g in groups})
    wanted = {g.key for g in groups}
    for i in range(0, len(keys), 500):
        flt = In("subject_key", tuple(keys[i : i + 500])) & IsNull("valid_to")
        for f in await store.find(agent, Tier.FACT, flt, limit=1_000_000, order_by="id"):
            if isinstance(f, Fact) and f.subject_key is not None:
                key = (f.subject_key, f.predicate, f.visibility)
                if key in wanted:
                    out[key].append(f)
    return out


async def open_facts_where(store: Store, agent: str, field: str, keys: Sequence[str]) -> dict[str, Fact]:
    """The open Facts whose ``field`` is one of ``keys`` (slots, subject keys), by id."""
    out: dict[str, Fact] = {}
    wanted = sorted(set(keys))
    for i in range(0, len(wanted), 500):
        flt = In(field, tuple(wanted[i : i + 500])) & IsNull("valid_to")
        for f in await store.find(agent, Tier.FACT, flt, limit=1_000_000, order_by="id"):
            if isinstance(f, Fact):
                out[f.id] = f
    return out
