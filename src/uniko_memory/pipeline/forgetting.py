"""``Forgetting``: the engine's forget verbs, each a durable job run at a safe moment.

A forget runs after the agent's queued post-ingest work (so no turn being forgotten is still on
its way in), inside the agent's exclusive cycle (so no consolidation reads what is being removed),
rebuilds the sessions it touched, and clears the recall cache however it ends. The job journal
(``consolidation.forget``) finishes a forget cut short, on the next ``Uniko.open`` or the next
forget of that agent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..consolidation.forget import (
    ForgetReport,
    ForgetRequest,
    finish_pending,
    forget_messages,
    forget_participant,
    pending_jobs,
    resume_forgets,
)
from ..errors import NotFound
from ..ingest.finalize import SessionFinalizer
from ..model import Message, Tier, message_id, participant_id, session_id
from ..store.filters import Eq
from .system import PipelineSystem

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Turns one ``forget_session`` call forgets (every turn of a session, in practice).
SESSION_TURNS_SCAN = 100_000


class Forgetting:
    """Forget turns, sessions and participants of the agents in one knowledge base."""

    def __init__(self, kb: Any, pipeline: PipelineSystem, finalizer: SessionFinalizer, cache: Any) -> None:
        self.kb = kb
        self.pipeline = pipeline
        self.finalizer = finalizer
        self.cache = cache

    async def run(self, agent: str, job: Callable[[], Awaitable[T]]) -> T:
        """Run ``job`` after ``agent``'s queued post-ingest work, in its exclusive cycle; the
        recall cache is cleared afterwards, whether the job completed or not."""
        await self.pipeline.flush(agent)
        try:
            async with self.pipeline.exclusive_cycle(agent):
                return await job()
        finally:
            self.cache.clear()

    def rebuilder(self, agent: str) -> Callable[[str], Awaitable[object]]:
        """The callback a forget job rebuilds a session's chunks and summary with."""

        async def rebuild(session_node_id: str) -> object:
            return await self.finalizer.finalize(agent, session_node_id)

        return rebuild

    async def forget_turn(self, agent: str, session: str, turn_id: str, *, hard: bool) -> ForgetReport:
        """Redact (``hard``: delete) one turn and what was derived only from it; rebuild its session."""
        mid = message_id(agent, turn_id)
        request = ForgetRequest(kind="messages", targets=[mid], hard=hard)
        store = self.kb.store
        rebuild = self.rebuilder(agent)

        async def job() -> ForgetReport:
            # A job for this very turn cut short earlier (the turn may be gone already): finish it.
            if (report := await finish_pending(store, agent, request, rebuild)) is not None:
                return report
            msg = await store.get(agent, mid)
            if not isinstance(msg, Message) or msg.session_id != session_id(agent, session):
                raise NotFound(f"no turn {turn_id!r} in session {session!r} of agent {agent!r}")
            return await forget_messages(
                store, self.kb.config, agent, [mid], hard=hard, rebuild_session=rebuild
            )

        return await self.run(agent, job)

    async def forget_session(self, agent: str, session: str, *, hard: bool = False) -> list[ForgetReport]:
        """Forget every live turn of a session, one ``forget_turn`` each (oldest first)."""
        found = await self.kb.store.find(
            agent, Tier.MESSAGE, Eq("session", session_id(agent, session)), limit=SESSION_TURNS_SCAN
        )
        return [
            await self.forget_turn(agent, session, message.external_id, hard=hard)
            for message in found
            if isinstance(message, Message)
        ]

    async def forget_participant(
        self, agent: str, participant: str, *, hard: bool, about: bool | None
    ) -> ForgetReport:
        """Redact (``hard``: delete) what ``participant`` said and, with ``about``, what was said
        about them (see ``Agent.forget_participant``)."""
        return await self.run(
            agent,
            lambda: forget_participant(
                self.kb.store,
                self.kb.config,
                agent,
                participant_id(agent, participant),
                hard=hard,
                about=about,
                rebuild_session=self.rebuilder(agent),
            ),
        )

    async def resume(self, agent: str) -> None:
        """Finish the forget jobs a previous process left in the journal (called on open).

        A job that fails again stays in the journal (its words were already removed if its unit
        committed) and is retried by the next forget call of this agent, which then raises."""
        store = self.kb.store
        if not await pending_jobs(store, agent):
            return
        try:
            await self.run(agent, lambda: resume_forgets(store, agent, rebuild_session=self.rebuilder(agent)))
        except Exception:
            log.exception("an interrupted forget of agent %s could not be finished on open", agent)
