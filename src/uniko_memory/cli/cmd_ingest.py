"""``uniko ingest`` and ``uniko ingest-doc``: store turns and documents through the facade."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import Tier
from .formats import InputError, InputTurn, check_turns, read_turns
from .output import _err, _out, _Progress

DEFAULT_PATH = Path("uniko.db")


@dataclass(frozen=True)
class RejectedTurn:
    """A turn the engine refused: where it is in the input, and why."""

    position: int  # index in the input, 0-based
    where: str  # "line 12", "conv-26 session_3 turn 4"
    id: str
    agent: str
    session: str
    reason: str

    def describe(self) -> str:
        return f"{self.where} (turn id {self.id!r}): {self.reason}"


@dataclass
class IngestSummary:
    turns: int = 0
    stored: int = 0
    replays: int = 0
    sessions: int = 0
    seconds: float = 0.0
    #: Turns refused and skipped (the rest was stored), in input order.
    rejected: list[RejectedTurn] = field(default_factory=list)


async def ingest_turns(
    uni: Any,
    turns: Sequence[InputTurn],
    *,
    finalize: bool = True,
    progress: Callable[[InputTurn], None] | None = None,
    strict: bool = False,
) -> IngestSummary:
    """Observe every turn (one transaction each), flush P3/P7a, finalise the touched sessions.

    A turn the engine refuses (a ``ValidationError`` or ``IdConflict`` about that turn) is
    recorded in ``rejected`` and the next one follows; with ``strict`` it raises ``InputError``
    naming its record instead. Any other error (the store failing, the engine closing) stops the
    run: it is not about one turn.
    """
    from ..ingest.bulk import TURN_REFUSALS, refusal_reason

    summary = IngestSummary(turns=len(turns))
    t0 = time.perf_counter()
    touched: dict[tuple[str, str], None] = {}
    if strict:  # stop at the first refused turn: one transaction per turn, in order
        for position, t in enumerate(turns):
            try:
                result = await uni.agent(t.agent).session(t.session).observe(t.turn())
            except TURN_REFUSALS as exc:
                rejected = RejectedTurn(position, t.where, t.id, t.agent, t.session, refusal_reason(exc))
                raise InputError(rejected.describe()) from None
            summary.replays += result.was_replay
            summary.stored += not result.was_replay
            touched[(t.agent, t.session)] = None
            if progress is not None:
                progress(t)
    else:  # runs of one session's turns go through observe_each (windowed NLP and commits)
        window = uni.config.ingest.import_window_turns
        start = 0
        for (agent, session), run in itertools.groupby(turns, key=lambda t: (t.agent, t.session)):
            rows = list(run)
            for a in range(0, len(rows), window):
                part = rows[a : a + window]
                try:
                    bulk = await uni.agent(agent).session(session).observe_each([t.turn() for t in part])
                except TURN_REFUSALS as exc:  # the session id itself is refused: all its turns are
                    reason = refusal_reason(exc)
                    refused = dict.fromkeys(range(len(part)), reason)
                else:
                    summary.stored += bulk.stored
                    summary.replays += bulk.replays
                    refused = {r.position: r.reason for r in bulk.refused}
                for k, t in enumerate(part):
                    if k in refused:
                        summary.rejected.append(
                            RejectedTurn(start + a + k, t.where, t.id, t.agent, t.session, refused[k])
                        )
                    if progress is not None:
                        progress(t)
                if len(refused) < len(part):
                    touched[(agent, session)] = None
            start += len(rows)
    for agent in dict.fromkeys(a for a, _ in touched):
        await uni.agent(agent).flush()
    if finalize:
        for agent, session in touched:
            await uni.agent(agent).session(session).finalize()
    summary.sessions = len(touched)
    summary.seconds = time.perf_counter() - t0
    return summary


async def _print_tiers(store: Any, agents: Sequence[str]) -> None:
    for agent in agents:
        _out(f"agent {agent}")
        for tier in Tier:
            n = await store.count(agent, tier)
            if n:
                _out(f"  {tier.value:<20} {n}")


#: Rejected turns listed one by one on stderr; beyond this many, only their count.
MAX_REJECTED_SHOWN = 50


async def ingest(
    path: Path,
    db: Path,
    agent: str | None,
    fmt: str,
    finalize: bool,
    plain: bool = False,
    strict: bool = False,
) -> int:
    from ..config import UnikoConfig
    from ..facade import Uniko

    # Fail on a malformed file before opening anything; with --strict, on a turn the engine
    # would refuse too (otherwise such a turn is reported and skipped).
    turns = read_turns(path, fmt, agent)
    config = UnikoConfig()
    if strict:
        check_turns(turns, config.ingest)
    agents = list(dict.fromkeys(t.agent for t in turns))
    _out(f"read {len(turns)} turns for {len(agents)} agent(s) from {path}")
    uni = await Uniko.open(db, config)
    try:
        with _Progress(len(turns), "ingest", plain=plain) as bar:
            summary = await ingest_turns(
                uni,
                turns,
                finalize=finalize,
                progress=lambda t: bar.advance(1, f"ingest {t.agent}"),
                strict=strict,
            )
        rate = summary.turns / summary.seconds if summary.seconds else 0.0
        _out(
            f"stored {summary.stored} turns ({summary.replays} already stored) in {summary.sessions} sessions "
            f"in {summary.seconds:.1f} s ({rate:.0f} turns/s)" + ("; sessions finalised" if finalize else "")
        )
        _out(f"store {db}")
        await _print_tiers(uni.kb.store, agents)
    finally:
        await uni.close()
    if summary.rejected:
        for r in summary.rejected[:MAX_REJECTED_SHOWN]:
            _err(f"uniko ingest: rejected {r.describe()}")
        more = len(summary.rejected) - MAX_REJECTED_SHOWN
        _err(
            f"uniko ingest: {len(summary.rejected)} of {summary.turns} turns rejected and skipped"
            + (f" ({more} not listed)" if more > 0 else "")
            + "; the rest was stored (--strict stores nothing when a turn is refused)"
        )
        return 1
    return 0


async def ingest_doc(
    files: Sequence[Path], db: Path, agent: str, mime_type: str | None, session: str | None, visibility: str
) -> int:
    from ..facade import Uniko

    failed = 0
    uni = await Uniko.open(db)
    try:
        memory = uni.agent(agent)
        for f in files:
            r = await memory.ingest_artifact(f, mime_type=mime_type, session=session, visibility=visibility)
            pages = f", {r.page_count} pages" if r.page_count is not None else ""
            state = "already stored" if r.was_replay else f"{r.chunks} chunks{pages}"
            _out(f"{f}: {r.artifact_node_id} ({r.mime_type}, {r.size:,} bytes) {state}")
            if r.secrets_redacted:
                _out(f"  masked {r.secrets_redacted} secret(s); original bytes stored: {r.bytes_stored}")
            if r.extraction_failed:
                failed += 1
                _err(f"  stored, but its text could not be extracted: {r.extraction_error}")
        _out(f"store {db}")
        await _print_tiers(uni.kb.store, [agent])
    finally:
        await uni.close()
    return 1 if failed else 0
