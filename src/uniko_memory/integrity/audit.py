"""The runtime integrity audit: forgotten, invalidated and out-of-scope memories never come back.

``await audit(uni, agent)`` samples the agent's memory once (read-only, from the raw store):

- **forgotten**: redacted nodes (``find(include_redacted=True)``);
- **invalidated**: Facts closed (``valid_to`` set), retired Topics, Procedures not active;
- **out of scope**: nodes whose visibility is not public: the audit asks as a viewer that is
  admitted to public memories only (``AUDIT_VIEWER``), so none of them may come back.

Then every ``ReadPath`` is probed with the texts most likely to find the sample (the out-of-scope
nodes' own words, the invalidated Facts' statements, live turns of the sessions that lost a turn)
and every node it returns, and every Message a recalled item cites, is checked. A probe that
raises is a ``probe_failure`` finding, never a clean result. Nothing is written; the audit
bypasses the recall cache except on the path that tests it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..model import Fact, Message, Node, Procedure, Tier, Topic, Viewer
from ..recall import ContextBundle
from ..store.filters import visible_to
from .paths import FORGOTTEN, INVALIDATED, OUT_OF_SCOPE, PROBE_FAILURE, ReadPath

if TYPE_CHECKING:
    from ..facade import Uniko

#: The viewer every probe asks as: admitted to public memories only.
AUDIT_VIEWER = Viewer(participant_id="__uniko_audit__")
#: Tiers a search can return (the store probes search each).
SEARCHED_TIERS = (
    Tier.MESSAGE,
    Tier.OBSERVATION,
    Tier.FACT,
    Tier.CHUNK,
    Tier.TOPIC,
    Tier.PROCEDURE,
    Tier.EPISODE,
)
#: Paths bound by the store contract only: an invalidated Fact is a valid store row.
STORE_PATHS = frozenset(
    {
        ReadPath.STORE_FIND,
        ReadPath.STORE_TEXT_SEARCH,
        ReadPath.STORE_VECTOR_SEARCH,
        ReadPath.STORE_HYBRID_SEARCH,
    }
)


class AuditConfig(BaseModel):
    """How much the audit samples and asks (named, so a nightly job can size it)."""

    #: Nodes sampled per kind of defect and tier.
    sample_size: int = Field(50, ge=1)
    #: Probe texts per path.
    probe_queries: int = Field(10, ge=1)
    #: Results asked per search / items per recall.
    probe_limit: int = Field(50, ge=1)
    probe_token_budget: int = Field(4000, ge=1)


class Finding(BaseModel):
    path: ReadPath
    node_id: str
    reason: str
    query: str | None = None
    detail: str = ""


class CheckResult(BaseModel):
    path: ReadPath
    probes: int = 0
    #: Nodes the path returned over all probes (a check that returned nothing proves little).
    returned: int = 0
    findings: list[Finding] = Field(default_factory=list)


class AuditReport(BaseModel):
    agent: str
    #: Sample sizes: how many forgotten, invalidated and out-of-scope nodes the probes looked for.
    sampled: dict[str, int]
    checks: list[CheckResult]

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.checks for f in c.findings]

    @property
    def ok(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        """Findings per path (0 for a clean one)."""
        return {c.path.value: len(c.findings) for c in self.checks}

    def offending_ids(self) -> dict[str, list[str]]:
        return {c.path.value: sorted({f.node_id for f in c.findings}) for c in self.checks if c.findings}


class _Sample:
    def __init__(self) -> None:
        self.forgotten: set[str] = set()
        self.invalidated: set[str] = set()
        self.out_of_scope: set[str] = set()
        self.queries: list[str] = []

    def why(self, node_id: str, path: ReadPath) -> str | None:
        if node_id in self.forgotten:
            return FORGOTTEN
        if node_id in self.out_of_scope:
            return OUT_OF_SCOPE
        if path not in STORE_PATHS and node_id in self.invalidated:
            return INVALIDATED
        return None


def _is_invalidated(node: Node) -> bool:
    if isinstance(node, Fact):
        return node.valid_to is not None
    if isinstance(node, Topic):
        return node.retired_at is not None
    if isinstance(node, Procedure):
        return node.status != "active"
    return False


def _text(node: Node) -> str:
    if isinstance(node, Fact):
        return node.statement()
    return node.search_text() or ""


async def _sample(store: Any, agent: str, cfg: AuditConfig) -> _Sample:
    s = _Sample()
    private_texts: list[str] = []
    invalid_texts: list[str] = []
    touched_sessions: set[str] = set()
    for tier in SEARCHED_TIERS:
        nodes = await store.find(
            agent, tier, limit=cfg.sample_size * 20, include_redacted=True, descending=True
        )
        for n in nodes:
            if n.redacted and len(s.forgotten) < cfg.sample_size * len(SEARCHED_TIERS):
                s.forgotten.add(n.id)
                if (sess := n.session_key()) is not None:
                    touched_sessions.add(sess)
            elif not n.redacted and n.visibility not in AUDIT_VIEWER.admitted_values():
                s.out_of_scope.add(n.id)
                if len(private_texts) < cfg.probe_queries:
                    private_texts.append(_text(n))
            elif not n.redacted and _is_invalidated(n):
                s.invalidated.add(n.id)
                if len(invalid_texts) < cfg.probe_queries:
                    invalid_texts.append(_text(n))
    neighbours: list[str] = []
    for sess in sorted(touched_sessions):
        from ..store.filters import Eq

        for m in await store.find(agent, Tier.MESSAGE, Eq("session", sess), limit=cfg.probe_queries):
            if isinstance(m, Message) and m.content:
                neighbours.append(m.content)
    texts = [t for t in (*private_texts, *invalid_texts, *neighbours) if t and t.strip()]
    if not texts:  # nothing to look for by its words: ask with the most recent live turns
        recent = await store.find(agent, Tier.MESSAGE, limit=cfg.probe_queries, descending=True)
        texts = [m.content for m in recent if isinstance(m, Message) and m.content]
    s.queries = list(dict.fromkeys(texts))[: cfg.probe_queries]
    return s


Probe = Callable[["Uniko", str, str, AuditConfig], Awaitable[list[str]]]


def _bundle_ids(bundle: ContextBundle) -> list[str]:
    return [x for i in bundle.items for x in (i.node_id, *i.message_ids())]


def _pinned(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Recall options with every path flag pinned off (gates as shipped), then ``extra``."""
    base: dict[str, Any] = {
        "graph": {"enabled": False},
        "channels": {"neighbor_expansion": False, "reply_expansion": False},
    }
    for k, v in (extra or {}).items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return base


async def _recall(uni: Uniko, agent: str, q: str, cfg: AuditConfig, **options: Any) -> list[str]:
    bundle = await uni.agent(agent).recall(
        q,
        viewer=AUDIT_VIEWER,
        token_budget=cfg.probe_token_budget,
        limit=cfg.probe_limit,
        use_cache=options.pop("use_cache", False),
        **options,
    )
    return _bundle_ids(bundle)


async def _p_find(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    flt = visible_to(AUDIT_VIEWER.admitted_values())
    return [n.id for t in SEARCHED_TIERS for n in await uni.kb.store.find(agent, t, flt, limit=100_000)]


async def _per_tier(search: Callable[[Tier, Any], Awaitable[list[Any]]]) -> list[str]:
    """The ids one store search returns over every searched tier, as the audit viewer."""
    flt = visible_to(AUDIT_VIEWER.admitted_values())
    return [h.id for t in SEARCHED_TIERS for h in await search(t, flt)]


async def _p_text(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    store = uni.kb.store
    return await _per_tier(lambda t, flt: store.text_search(agent, t, q, k=cfg.probe_limit, filter=flt))


async def _p_vector(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    if uni.kb.embedder is None or uni.kb.store.dim is None:
        return []
    vec = await uni.kb.embedder.embed_query(q)
    store = uni.kb.store
    return await _per_tier(lambda t, flt: store.vector_search(agent, t, vec, k=cfg.probe_limit, filter=flt))


async def _p_hybrid(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    vec = await uni.kb.embedder.embed_query(q) if uni.kb.embedder is not None and uni.kb.store.dim else None
    store = uni.kb.store
    return await _per_tier(
        lambda t, flt: store.hybrid_search(agent, t, q, vec, k=cfg.probe_limit, filter=flt)
    )


GATES_OFF = {"phase1_coverage_gate": 1.0, "phase2_coverage_gate": 1.0}


async def _p_recall(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    return await _recall(uni, agent, q, cfg, **_pinned())


async def _p_all_phases(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    return await _recall(uni, agent, q, cfg, **_pinned({"phases": GATES_OFF}))


async def _p_graph(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    return await _recall(uni, agent, q, cfg, **_pinned({"phases": GATES_OFF, "graph": {"enabled": True}}))


async def _p_neighbours(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    return await _recall(
        uni, agent, q, cfg, **_pinned({"phases": GATES_OFF, "channels": {"neighbor_expansion": True}})
    )


async def _p_replies(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    return await _recall(
        uni, agent, q, cfg, **_pinned({"phases": GATES_OFF, "channels": {"reply_expansion": True}})
    )


async def _p_cache(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    first = await _recall(uni, agent, q, cfg, use_cache=True, **_pinned())
    return first + await _recall(uni, agent, q, cfg, use_cache=True, **_pinned())


async def _p_wake_up(uni: Uniko, agent: str, q: str, cfg: AuditConfig) -> list[str]:
    from ..wakeup import IDENTITY_ID

    bundle = await uni.agent(agent).wake_up(cfg.probe_token_budget, viewer=AUDIT_VIEWER)
    return [i for i in _bundle_ids(bundle) if i != IDENTITY_ID]


#: One probe per path. ``probe_for`` raises for a path missing here (the coverage guard).
PROBES: dict[ReadPath, Probe] = {
    ReadPath.STORE_FIND: _p_find,
    ReadPath.STORE_TEXT_SEARCH: _p_text,
    ReadPath.STORE_VECTOR_SEARCH: _p_vector,
    ReadPath.STORE_HYBRID_SEARCH: _p_hybrid,
    ReadPath.RECALL: _p_recall,
    ReadPath.RECALL_ALL_PHASES: _p_all_phases,
    ReadPath.RECALL_GRAPH: _p_graph,
    ReadPath.RECALL_NEIGHBOURS: _p_neighbours,
    ReadPath.RECALL_REPLIES: _p_replies,
    ReadPath.RECALL_CACHE: _p_cache,
    ReadPath.WAKE_UP: _p_wake_up,
}
#: Paths that take no query: probed once.
QUERYLESS = frozenset({ReadPath.STORE_FIND, ReadPath.WAKE_UP})


def probe_for(path: ReadPath) -> Probe:
    try:
        return PROBES[path]
    except KeyError:
        raise NotImplementedError(f"no integrity probe for read path {str(path)!r}") from None


async def check(uni: Uniko, agent: str, path: ReadPath, sample: _Sample, cfg: AuditConfig) -> CheckResult:
    probe = probe_for(path)  # outside the isolation below: a missing probe is a bug, not a finding
    result = CheckResult(path=path)
    queries = sample.queries[:1] if path in QUERYLESS else sample.queries
    for q in queries or [""]:
        if not q and path not in QUERYLESS:
            continue
        result.probes += 1
        try:
            ids = await probe(uni, agent, q, cfg)
        except Exception as exc:  # a probe that cannot complete is a finding, never clean
            result.findings.append(
                Finding(
                    path=path,
                    node_id="",
                    reason=PROBE_FAILURE,
                    query=q,
                    detail=f"{type(exc).__name__}: {exc}",
                )
            )
            continue
        result.returned += len(ids)
        seen = {f.node_id for f in result.findings}
        for nid in ids:
            why = sample.why(nid, path)
            if why is not None and nid not in seen:
                seen.add(nid)
                result.findings.append(Finding(path=path, node_id=nid, reason=why, query=q or None))
    return result


async def audit(
    uni: Uniko, agent: str, cfg: AuditConfig | None = None, paths: list[ReadPath] | None = None
) -> AuditReport:
    """Audit ``agent``'s memory on every read path (or ``paths``); see the module docstring."""
    cfg = cfg or AuditConfig()
    sample = await _sample(uni.kb.store, agent, cfg)
    checks = [await check(uni, agent, p, sample, cfg) for p in (paths or list(ReadPath))]
    return AuditReport(
        agent=agent,
        sampled={
            FORGOTTEN: len(sample.forgotten),
            INVALIDATED: len(sample.invalidated),
            OUT_OF_SCOPE: len(sample.out_of_scope),
            "probe_queries": len(sample.queries),
        },
        checks=checks,
    )


__all__ = [
    "AUDIT_VIEWER",
    "PROBES",
    "AuditConfig",
    "AuditReport",
    "CheckResult",
    "Finding",
    "audit",
    "probe_for",
]
