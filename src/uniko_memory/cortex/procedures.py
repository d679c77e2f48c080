"""P5 procedures: what to do after what, learned from consecutive successful Episodes.

Detection (upstream ``sequence_detector``): pairs ``e1 -FOLLOWED_BY-> e2`` of the agent's Episodes,
both with outcome ``success``, counted per ``(e1.action_type, e2.action_type)``. A pair seen
``promote_threshold`` times becomes an active Procedure, below that a candidate.
``record_procedure_use`` keeps effectiveness honest (deprecate below ``demote_effectiveness``,
restore at ``repromote_effectiveness``); ``match_procedures`` finds the active ones whose
precondition holds in a state.

Beyond upstream, where every query Episode is "retrieve": a query Episode's action type says what
kind of question it was (expected answer type, temporal or not, entities or not), and a Procedure
keeps the recall ``settings`` that worked for its second step, so ``procedure_settings_for`` can
hand recall the settings that succeeded for questions of that kind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from ..config import UnikoConfig
from ..model import Direction, Edge, EdgeType, Episode, Procedure, Tier, make_id
from ..model.time import utcnow
from ..store.filters import Eq
from ..store.protocol import Store

SUCCESS = "success"
#: Recall settings a query Episode records and a Procedure may hand back.
SETTING_KEYS = ("token_budget", "limit", "phase1_strategy", "query_variants")
MAX_EPISODES = 1_000_000


class PromotionStats(BaseModel):
    pairs: int = 0
    candidates: int = 0
    active: int = 0
    promoted: int = 0


def action_type_for(answer_type: str | None, temporal: bool, has_entities: bool) -> str:
    """``ask:<answer type|open>:<temporal|atemporal>:<entities|general>`` — no ',' or '=' in it."""
    return ":".join(
        [
            "ask",
            answer_type or "open",
            "temporal" if temporal else "atemporal",
            "entities" if has_entities else "general",
        ]
    )


def action_type_of_intent(intent: Any) -> str:
    """The action type of a recall intent (anything with ``expected_answer_type``,
    ``temporal_window`` and ``entity_refs``), or the string itself."""
    if isinstance(intent, str):
        return intent
    return action_type_for(
        getattr(intent, "expected_answer_type", None),
        getattr(intent, "temporal_window", None) is not None,
        bool(getattr(intent, "entity_refs", None)),
    )


def procedure_id(agent: str, action_a: str, action_b: str) -> str:
    return make_id("prc", agent, action_a, action_b)


def effectiveness(success: int, failure: int) -> float:
    total = success + failure
    return 1.0 if total == 0 else success / total


def _settings_of(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Per setting, the value used most often by the successful episodes (latest wins ties)."""
    values: dict[str, list[tuple[str, Any, datetime]]] = defaultdict(list)
    for e in episodes:
        for k, v in (e.state.get("recall_settings") or {}).items():
            if k in SETTING_KEYS:
                values[k].append((repr(v), v, e.timestamp))
    out: dict[str, Any] = {}
    for k, vs in values.items():
        counts = Counter(r for r, _, _ in vs)
        best = max(vs, key=lambda x: (counts[x[0]], x[2]))
        out[k] = best[1]
    return out


def _description(a: str, b: str, count: int, settings: Mapping[str, Any]) -> str:
    text = f"After a {a} question, a {b} question was answered successfully ({count} times)"
    if settings:
        text += " with " + ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
    return text + "."


async def promote_procedures(
    store: Store,
    config: UnikoConfig,
    embedder: Any,
    agent: str,
    *,
    participant_id: str | None = None,
    now: datetime | None = None,
) -> PromotionStats:
    """Count successful FOLLOWED_BY pairs and upsert their Procedures (idempotent)."""
    cc = config.cortex
    flt = Eq("participant", participant_id) if participant_id else None
    episodes = {
        e.id: e
        for e in await store.find(agent, Tier.EPISODE, flt, limit=MAX_EPISODES)
        if isinstance(e, Episode)
    }
    stats = PromotionStats()
    if not episodes:
        return stats
    follows = await store.neighbors(agent, list(episodes), [EdgeType.FOLLOWED_BY], Direction.OUT)
    pairs: dict[tuple[str, str], list[tuple[Episode, Episode]]] = defaultdict(list)
    for e in follows:
        e1, e2 = episodes.get(e.src), episodes.get(e.dst)
        if e1 is None or e2 is None or e1.outcome != SUCCESS or e2.outcome != SUCCESS:
            continue
        pairs[(e1.action_type, e2.action_type)].append((e1, e2))
    stats.pairs = len(pairs)
    if not pairs:
        return stats
    ids = {key: procedure_id(agent, *key) for key in pairs}
    existing = await store.get_many(agent, list(ids.values()))
    writes: list[tuple[Procedure, list[tuple[Episode, Episode]]]] = []
    for key, found in sorted(pairs.items()):
        a, b = key
        count = len(found)
        settings = _settings_of([e2 for _, e2 in found])
        cur = existing.get(ids[key])
        if isinstance(cur, Procedure) and cur.redacted:
            continue
        if isinstance(cur, Procedure):
            success = max(cur.success_count, count)
            status = cur.status
            if status == "candidate" and count >= cc.promote_threshold:
                status = "active"
                stats.promoted += 1
            proc = cur.model_copy(
                update={
                    "success_count": success,
                    "use_count": max(cur.use_count, success + cur.failure_count),
                    "effectiveness": effectiveness(success, cur.failure_count),
                    "status": status,
                    "settings": settings or cur.settings,
                    "description": _description(a, b, success, settings or cur.settings),
                }
            )
        else:
            status = "active" if count >= cc.promote_threshold else "candidate"
            stats.promoted += status == "active"
            proc = Procedure(
                id=ids[key],
                agent=agent,
                name=f"{a} → {b}",
                description=_description(a, b, count, settings),
                precondition_rule=f"last_action_type={a}",
                action_a=a,
                action_b=b,
                effectiveness=1.0,
                use_count=count,
                success_count=count,
                status=status,
                settings=settings,
                created_at=now or utcnow(),
            )
        if isinstance(cur, Procedure) and cur == proc:
            continue
        writes.append((proc, found))
    for proc, _ in writes:
        stats.active += proc.status == "active"
        stats.candidates += proc.status == "candidate"
    if not writes:
        return stats
    vectors = None
    if embedder is not None:
        vectors = await embedder.embed_documents([p.search_text() or p.name for p, _ in writes])
    async with store.unit(agent) as u:
        for i, (proc, found) in enumerate(writes):
            u.put(proc, vectors[i] if vectors is not None else None)
            for e1, e2 in found:
                u.put_edge(Edge(type=EdgeType.PROMOTED, src=proc.id, dst=e2.id, props={"after": e1.id}))
    return stats


async def record_procedure_use(
    store: Store, config: UnikoConfig, agent: str, proc_id: str, success: bool, *, now: datetime | None = None
) -> Procedure:
    """Count one use; active → deprecated below ``demote_effectiveness``, back at ``repromote``.

    Using a procedure never promotes a candidate.
    """
    from ..errors import NotFound

    cc = config.cortex
    async with store.unit(agent) as u:
        cur = await u.get(proc_id)
        if not isinstance(cur, Procedure) or cur.redacted:
            raise NotFound(f"no procedure {proc_id!r} for agent {agent!r}")
        success_n = cur.success_count + (1 if success else 0)
        failure_n = cur.failure_count + (0 if success else 1)
        eff = effectiveness(success_n, failure_n)
        status = cur.status
        if status == "active" and eff < cc.demote_effectiveness:
            status = "deprecated"
        elif status == "deprecated" and eff >= cc.repromote_effectiveness:
            status = "active"
        proc = cur.model_copy(
            update={
                "use_count": cur.use_count + 1,
                "success_count": success_n,
                "failure_count": failure_n,
                "effectiveness": eff,
                "status": status,
                "last_used_at": now or utcnow(),
            }
        )
        u.put(proc)
    return proc


def parse_precondition(rule: str) -> list[tuple[str, str]] | None:
    """``k=v,k2=v2`` → pairs; ``[]`` for an empty rule; None when malformed (fails closed)."""
    if not rule.strip():
        return []
    out = []
    for clause in rule.split(","):
        if clause.count("=") != 1:
            return None
        k, v = (x.strip() for x in clause.split("="))
        if not k or not v:
            return None
        out.append((k, v))
    return out


def precondition_holds(rule: str, state: Mapping[str, Any]) -> bool:
    clauses = parse_precondition(rule)
    if clauses is None:
        return False
    return all(k in state and str(state[k]) == v for k, v in clauses)


async def match_procedures(store: Store, agent: str, state: Mapping[str, Any]) -> list[Procedure]:
    """Active procedures whose precondition holds in ``state``, most effective first."""
    active = await store.find(
        agent, Tier.PROCEDURE, Eq("status", "active"), limit=MAX_EPISODES, order_by="id"
    )
    found = [p for p in active if isinstance(p, Procedure) and precondition_holds(p.precondition_rule, state)]
    return sorted(found, key=lambda p: (-p.effectiveness, -p.success_count, p.id))


async def procedure_settings_for(
    kb: Any, agent: str, intent: Any, *, last_action_type: str | None = None
) -> dict[str, Any] | None:
    """Recall settings of the best active procedure whose second step is this kind of question.

    ``intent`` is a recall ``IntentProfile`` (or an action type string). With
    ``last_action_type`` only procedures whose precondition holds after that action count.
    """
    action = action_type_of_intent(intent)
    state = {"last_action_type": last_action_type} if last_action_type else None
    store: Store = kb.store if hasattr(kb, "store") else kb
    if state is not None:
        procs = await match_procedures(store, agent, state)
    else:
        procs = [
            p
            for p in await store.find(agent, Tier.PROCEDURE, Eq("status", "active"), limit=MAX_EPISODES)
            if isinstance(p, Procedure)
        ]
        procs.sort(key=lambda p: (-p.effectiveness, -p.success_count, p.id))
    for p in procs:
        if p.action_b == action and p.settings:
            return dict(p.settings)
    return None
