"""``Session``: one conversation thread of an agent (writes, finalisation, its stored turns)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..ingest.atomic import ObserveResult, UnitResult
from ..ingest.bulk import BulkObserveResult
from ..ingest.finalize import FinalizeReport
from ..ingest.turn import Turn, check_session_id
from ..model import Message, Tier, session_id
from ..store.filters import Eq
from .loop import engine_verb

if TYPE_CHECKING:
    from .uniko import Uniko

#: Turns ``Session.messages`` lists at most (every turn of a session, in practice).
SESSION_SCAN = 100_000


def _check_turns(turns: object, verb: str) -> None:
    """``turns`` must be an iterable of ``Turn``s. ``None`` or a number would fail as a raw
    ``TypeError``, and a string, a mapping or a single ``Turn`` (each iterable too) would be taken
    apart into one refused "turn" per character, key or field: all are refused here, by name."""
    if isinstance(turns, Turn):
        raise ValidationError(f"{verb} takes an iterable of Turns, got one Turn: pass [turn], or use observe")
    if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Iterable):
        raise ValidationError(f"{verb} takes an iterable of Turns (a list, say), got {type(turns).__name__}")


class UnitBuilder:
    """``session.unit().turn(...).turn(...).commit()``: several turns in one transaction."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._turns: list[Turn] = []

    def turn(self, sender: str | Turn, content: str | None = None, **kwargs: Any) -> UnitBuilder:
        if isinstance(sender, Turn):
            self._turns.append(sender)
        else:
            if content is None:
                raise ValidationError("turn() needs content")
            self._turns.append(Turn(sender=sender, content=content, **kwargs))
        return self

    async def commit(self) -> UnitResult:
        return await self._session.commit_unit(self._turns)

    def commit_sync(self) -> UnitResult:
        return self._session.uniko.run_sync(self.commit())


class Session:
    """One conversation thread of an agent; created on first use."""

    def __init__(self, uni: Uniko, agent_id: str, external_id: str) -> None:
        check_session_id(external_id)  # refused here, not at the first write
        self._uni = uni
        self.agent_id = agent_id
        self.session_id = external_id
        self.node_id = session_id(agent_id, external_id)

    @property
    def uniko(self) -> Uniko:
        """The engine this session belongs to."""
        return self._uni

    @engine_verb
    async def observe(self, turn: Turn) -> ObserveResult:
        """Store one turn (P1 + P2) and return once it is durable; P3/P7a follow in the background."""
        result = await self.commit_unit([turn])
        return result.results[0].model_copy(update={"timings": result.timings})

    @engine_verb
    async def observe_each(self, turns: Iterable[Turn]) -> BulkObserveResult:
        """Store many turns (an import); a turn the engine refuses is reported in ``refused`` with
        its position and reason, and the next one follows.

        Turns go ``IngestConfig.import_window_turns`` at a time: one NLP pass and one transaction
        per window, each turn checked on its own (the id, refusal and replay a single ``observe``
        gives it). Unlike ``commit_unit`` (all or nothing), what was stored stays stored; an error
        that is not about one turn (the store failing) stops the run and is raised, and the turns
        of the window it hit are not stored (a rerun replays the stored ones and goes on).
        """
        _check_turns(turns, "observe_each")
        window = self._uni.config.ingest.import_window_turns
        out = BulkObserveResult()
        source = iter(turns)
        position = 0
        while batch := list(itertools.islice(source, window)):
            part, items = await self._uni._atomic.ingest_window(
                self.agent_id, self.session_id, batch, first_position=position
            )
            if items:
                await self._uni._pipeline.enqueue_post(items)
            out.add(part)
            position += len(batch)
        return out

    @engine_verb
    async def commit_unit(self, turns: Sequence[Turn]) -> UnitResult:
        _check_turns(turns, "commit_unit")
        result, items = await self._uni._atomic.ingest(self.agent_id, self.session_id, list(turns))
        if items:
            await self._uni._pipeline.enqueue_post(items)
        return result

    def unit(self) -> UnitBuilder:
        return UnitBuilder(self)

    @engine_verb
    async def submit(self, turn: Turn, *, wait: bool = False) -> asyncio.Future[UnitResult]:
        """Queue a turn on the streaming path; raises ``Backpressure`` when full unless ``wait``."""
        return await self._uni._pipeline.submit_ingest(self.agent_id, self.session_id, [turn], wait=wait)

    @engine_verb
    async def flush(self, timeout: float | None = None) -> None:
        await self._uni._pipeline.flush(self.agent_id, timeout)

    @engine_verb
    async def finalize(self, *, close: bool = False) -> FinalizeReport:
        """Build transcript and observation chunks and the summary, after pending background work."""
        await self._uni._pipeline.flush(self.agent_id)
        return await self._uni._finalizer.finalize(self.agent_id, self.node_id, close=close)

    @engine_verb
    async def messages(self, *, include_redacted: bool = False) -> list[Message]:
        """The stored turns of this session in the order they were stored (``seq``); redacted ones
        (blank) only with ``include_redacted``. For adapters that keep their own records in turns."""
        found = await self._uni.kb.store.find(
            self.agent_id,
            Tier.MESSAGE,
            Eq("session", self.node_id),
            limit=SESSION_SCAN,
            order_by="seq",
            include_redacted=include_redacted,
        )
        return [m for m in found if isinstance(m, Message)]

    # Blocking twins (thin: they run the async verb on the engine loop).
    def observe_sync(self, turn: Turn) -> ObserveResult:
        return self._uni.run_sync(self.observe(turn))

    def observe_each_sync(self, turns: Iterable[Turn]) -> BulkObserveResult:
        return self._uni.run_sync(self.observe_each(turns))

    def commit_unit_sync(self, turns: Sequence[Turn]) -> UnitResult:
        return self._uni.run_sync(self.commit_unit(turns))

    def flush_sync(self, timeout: float | None = None) -> None:
        self._uni.run_sync(self.flush(timeout))

    def finalize_sync(self, *, close: bool = False) -> FinalizeReport:
        return self._uni.run_sync(self.finalize(close=close))

    def messages_sync(self, *, include_redacted: bool = False) -> list[Message]:
        return self._uni.run_sync(self.messages(include_redacted=include_redacted))

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if exc[0] is None:
            await self.finalize()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finalize_sync()
