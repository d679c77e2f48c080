"""Forgetting: redact or delete evidence, then re-evaluate everything derived from it.

Three entry points share one core:

- ``forget_messages(..., hard=False)``: redact Messages, their Observations and message Chunks;
- ``forget_messages(..., hard=True)``: delete them (the NEXT chain is re-linked around a deleted turn);
- ``forget_participant``: every Message they sent, every Observation they spoke or that is ABOUT
  them, every Fact ABOUT them, the Episodes they recorded, their Participant and person Entity;
  with ``about`` (the default for a hard forget) also the statements others made about them:
  Messages by anyone else whose mentions resolve to the person's Entity, and all derived from them.

Then: a Fact that loses its last live support has its validity closed and is redacted (its words
came from the forgotten turn; a closed Fact is still read by the temporal and graph channels);
a Fact that keeps support gets its counts lowered; Entities no longer mentioned anywhere are
dropped (a redacted Entity keeps no name); Episodes whose recall used forgotten nodes are dropped;
Topics touching the forgotten Entities, the session chunks quoting what is forgotten and the
affected sessions' Summaries are deleted (rebuilt by the caller's ``rebuild_session`` and the next
topic detection). Nothing forgotten is read by recall again.

Every forget is a durable job (``journal``): planned from the graph (``plan``), recorded in the
store before anything changes, carried out in one unit of work (``apply``), followed by the
session rebuilds, then removed from the journal and the store compacted (``Store.compact``: on the
embedded store the FTS index is merged and the WAL checkpointed and truncated, so the forgotten
bytes leave the files). A job cut short is finished by the next ``Uniko.open`` (recovery) or by
the next forget call of the agent; a retried call returns the finished job's report (``resumed``).

Callers serialise forget calls per agent (the facade holds the agent's cycle lock).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from ...config import UnikoConfig
from ...errors import NotFound
from ...model.time import utcnow
from ...store.protocol import Store
from .apply import SUBJECT_FORGOTTEN, SUPPORT_DELETED, SUPPORT_FORGOTTEN, apply_plan, blanked
from .journal import begin, finish, pending_jobs, tombstones
from .model import ForgetJob, ForgetPlan, ForgetReport, ForgetRequest
from .plan import MAX_NODES, plan_messages, plan_participant

__all__ = [
    "MAX_NODES",
    "SUBJECT_FORGOTTEN",
    "SUPPORT_DELETED",
    "SUPPORT_FORGOTTEN",
    "ForgetJob",
    "ForgetPlan",
    "ForgetReport",
    "ForgetRequest",
    "RebuildSession",
    "blanked",
    "finish_pending",
    "forget_messages",
    "forget_participant",
    "pending_jobs",
    "resume_forgets",
]

RebuildSession = Callable[[str], Awaitable[object]]


async def resume_forgets(
    store: Store, agent: str, *, rebuild_session: RebuildSession | None = None
) -> list[tuple[ForgetRequest, ForgetReport]]:
    """Finish every job of ``agent`` left in the journal; returns each request with its report."""
    done = []
    for job in await pending_jobs(store, agent):
        report = await _carry_out(store, agent, job, rebuild_session)
        done.append((job.request, report.model_copy(update={"resumed": True})))
    return done


async def _carry_out(
    store: Store, agent: str, job: ForgetJob, rebuild: RebuildSession | None
) -> ForgetReport:
    await apply_plan(store, agent, job.plan, job.stamp)
    report = job.plan.report()
    if rebuild is not None:
        for sid in job.plan.rebuild:
            if await store.get(agent, sid) is not None:
                await rebuild(sid)
                report.sessions_rebuilt.append(sid)
    # Compacted before the journal lets go (a crash here compacts again on resume); a person's
    # erasure rewrites the whole file, a turn's leaves the rewrite of pages' free space to the next.
    await store.compact(full=job.request.kind == "participant")
    await finish(store, agent, job)
    await store.compact()  # the journal's own write leaves the WAL too (one segment: no merge)
    return report


async def _run(
    store: Store,
    agent: str,
    request: ForgetRequest,
    plan: ForgetPlan,
    rebuild: RebuildSession | None,
    now: datetime | None,
) -> ForgetReport:
    if plan.is_empty():
        return ForgetReport(nothing_to_do=True)
    job = ForgetJob(id=uuid.uuid4().hex, request=request, plan=plan, stamp=now or utcnow())
    await begin(store, agent, job)  # durable before the first change
    return await _carry_out(store, agent, job, rebuild)


async def finish_pending(
    store: Store, agent: str, request: ForgetRequest, rebuild: RebuildSession | None
) -> ForgetReport | None:
    """Finish the agent's interrupted jobs; the report of the one for ``request``, if there was one."""
    for done, report in await resume_forgets(store, agent, rebuild_session=rebuild):
        if done == request:
            return report
    return None


async def forget_messages(
    store: Store,
    config: UnikoConfig,
    agent: str,
    message_ids: Sequence[str],
    *,
    hard: bool,
    rebuild_session: RebuildSession | None = None,
    now: datetime | None = None,
) -> ForgetReport:
    """Forget (redact) or delete messages and what was derived from them; see the module docstring."""
    request = ForgetRequest(kind="messages", targets=sorted(set(message_ids)), hard=hard)
    if (report := await finish_pending(store, agent, request, rebuild_session)) is not None:
        return report
    plan = await plan_messages(store, agent, request.targets, hard=hard)
    return await _run(store, agent, request, plan, rebuild_session, now)


async def forget_participant(
    store: Store,
    config: UnikoConfig,
    agent: str,
    pid: str,
    *,
    hard: bool = False,
    about: bool | None = None,
    rebuild_session: RebuildSession | None = None,
    now: datetime | None = None,
) -> ForgetReport:
    """GDPR: everything a participant said, everything stored about them, and the Participant.

    ``about`` (default: ``hard``) also forgets what others said about them. A participant whose
    hard forget completed before reports ``nothing_to_do``; an id never stored raises ``NotFound``.
    """
    request = ForgetRequest(
        kind="participant", targets=[pid], hard=hard, about=hard if about is None else about
    )
    if (report := await finish_pending(store, agent, request, rebuild_session)) is not None:
        return report
    plan = await plan_participant(store, agent, pid, hard=hard, about=request.about)
    if plan is None:
        if pid in await tombstones(store, agent):
            return ForgetReport(nothing_to_do=True)
        raise NotFound(f"no participant {pid!r} for agent {agent!r}")
    return await _run(store, agent, request, plan, rebuild_session, now)
