"""The forget journal and tombstones, kept in the store's meta records (every backend has them).

``forget.journal/<agent>``: the jobs begun and not finished, as JSON. A job is written here (one
committed meta write) before the first node is touched and removed once everything is done, so a job
cut short (a crash, a failed write) is found and finished by the next open or the next forget.

``forget.tombstones/<agent>``: for each participant forgotten, their id and their person Entity's
id (both hashes of the agent and the name, so no name is kept) and whether a hard forget completed.
It lets a second hard forget report "nothing to do" where an id never seen raises ``NotFound``, and
a later forget of a soft-forgotten person (whose name was blanked) still find their Entity.

Callers serialise jobs per agent (the facade holds the agent's cycle lock around every forget).
"""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter

from ...store.protocol import Store
from .model import ForgetJob


class Tombstone(BaseModel):
    entity: str | None = None
    hard: bool = False


_JOBS = TypeAdapter(list[ForgetJob])
_STONES = TypeAdapter(dict[str, Tombstone])


def journal_key(agent: str) -> str:
    return f"forget.journal/{agent}"


def tombstone_key(agent: str) -> str:
    return f"forget.tombstones/{agent}"


async def pending_jobs(store: Store, agent: str) -> list[ForgetJob]:
    raw = await store.get_meta(journal_key(agent))
    return _JOBS.validate_json(raw) if raw else []


async def _save(store: Store, agent: str, jobs: list[ForgetJob]) -> None:
    await store.set_meta(journal_key(agent), _JOBS.dump_json(jobs).decode())


async def begin(store: Store, agent: str, job: ForgetJob) -> None:
    """Record ``job`` durably; nothing of it has been done yet."""
    jobs = [j for j in await pending_jobs(store, agent) if j.id != job.id]
    await _save(store, agent, [*jobs, job])


async def finish(store: Store, agent: str, job: ForgetJob) -> None:
    """Mark ``job`` done: the tombstones first, then the journal entry. Two meta writes, so a
    crash may fall between them; in this order it leaves the job pending (a retry resumes it,
    which is idempotent), never a finished forget with neither a job nor a tombstone (a retry
    would then say the participant was never stored)."""
    if job.request.kind == "participant":
        stones = await tombstones(store, agent)
        fresh = dict(stones)
        for pid in job.request.targets:
            before = stones.get(pid)
            fresh[pid] = Tombstone(
                entity=job.plan.person_entity or (before.entity if before else None),
                hard=job.request.hard or (before is not None and before.hard),
            )
        if fresh != stones:
            await store.set_meta(tombstone_key(agent), _STONES.dump_json(fresh).decode())
    jobs = await pending_jobs(store, agent)
    if any(j.id == job.id for j in jobs):
        await _save(store, agent, [j for j in jobs if j.id != job.id])


async def tombstones(store: Store, agent: str) -> dict[str, Tombstone]:
    raw = await store.get_meta(tombstone_key(agent))
    return _STONES.validate_json(raw) if raw else {}
