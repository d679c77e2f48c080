"""The forget journal and tombstones, kept in the store's meta records (every backend has them).

``forget.journal/<agent>``: the jobs begun and not finished, as JSON. A job is written here (one
committed meta write) before the first node is touched and removed once everything is done, so a job
cut short (a crash, a failed write) is found and finished by the next open or the next forget.

``forget.tombstones/<agent>``: the ids of participants whose hard forget completed. Participant ids
are hashes of the agent and the normalised name, so the list holds no name; it lets a second hard
forget of the same person report "nothing to do" where an id never seen raises ``NotFound``.

Callers serialise jobs per agent (the facade holds the agent's cycle lock around every forget).
"""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from ...store.protocol import Store
from .model import ForgetJob

_JOBS = TypeAdapter(list[ForgetJob])


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
    jobs = await pending_jobs(store, agent)
    if any(j.id == job.id for j in jobs):
        await _save(store, agent, [j for j in jobs if j.id != job.id])
    if job.request.kind == "participant" and job.request.hard:
        stones = await tombstones(store, agent)
        fresh = sorted(set(stones) | set(job.request.targets))
        if fresh != stones:
            await store.set_meta(tombstone_key(agent), json.dumps(fresh))


async def tombstones(store: Store, agent: str) -> list[str]:
    raw = await store.get_meta(tombstone_key(agent))
    return sorted(json.loads(raw)) if raw else []
