"""Every read path of uniko-memory, and the integrity check each one must pass.

A read path is an async function ``(Probe) -> list[Seen]``: it reads one agent's memory the way one
public API does (a Store method, a recall mode, the recall cache, a graph walk, the topics, the
session summaries, an integration's retriever, store or memory block) and hands back what its
caller would get. ``audit`` checks every returned thing against the ``Oracle`` (which turns exist,
whose they are, who may see them, which were forgotten):

- a node it names is a node of the queried agent, and exists (never another agent's, never deleted);
- a redacted node comes back only from a raw id lookup (``tombstones``), and then blank;
- on a path asked on a viewer's behalf (``scoped``), the node's visibility admits the viewer;
- its text holds no marker word of another agent, of a forgotten (redacted or deleted) turn, or, on
  a scoped path, of a turn whose visibility does not admit the viewer.

A path that raises is a finding ("did not complete"), never a clean result. ``READ_PATHS`` is the
registry; ``api_read_surface()`` lists the public read methods of the Store protocol, the facade
and the integrations, and ``uncovered()`` names each one that no registered path covers and
``NOT_READS`` does not explain (eidet: "every reachability path needs its own IntegrityCheck").
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, get_args

from uniko_memory.facade import Agent, Session, Uniko
from uniko_memory.model import Direction, EdgeType, Node, Tier, Viewer
from uniko_memory.providers.chat import ChatResult
from uniko_memory.recall import ContextBundle
from uniko_memory.store.filters import Filter, IsNull, all_of, visible_to
from uniko_memory.store.protocol import Store

#: Marker words: one per turn, never an English word, never inside another marker.
MARKER = re.compile(r"\bvq[a-z]{5}\b")
#: BM25 queries are OR-ed over at most 64 tokens; hostile words fill what the query leaves.
MAX_QUERY_WORDS = 60
#: Raw ``get`` is one store call per id: the hostile ids first, then at most this many in all.
MAX_GET_CALLS = 30
SCAN = 100_000
#: What "now" is for temporal recall in these tests (turns are dated around May 2023).
REFERENCE_TS = datetime(2023, 5, 20, 12, 0, tzinfo=UTC)


def marker(i: int) -> str:
    """The ``i``-th marker word: ``vq`` + five letters (base 26), e.g. ``vqaaaab``."""
    letters = []
    for _ in range(5):
        i, r = divmod(i, 26)
        letters.append(chr(97 + r))
    return "vq" + "".join(reversed(letters))


# --------------------------------------------------------------------------- the oracle
@dataclass
class Mark:
    """What the model knows about the turn that carried one marker word."""

    agent: str
    visibility: str
    session: str
    turn_id: str
    sender: str
    live: bool = True
    #: "turn" (a Message: forgettable) or "artifact" (a document: no forget verb yet).
    kind: str = "turn"


@dataclass
class Oracle:
    marks: dict[str, Mark] = field(default_factory=dict)
    #: agent -> the external session ids it has (as the model knows them).
    sessions: dict[str, set[str]] = field(default_factory=dict)

    def why_forbidden(self, word: str, agent: str, viewer: Viewer | None, scoped: bool) -> str | None:
        m = self.marks.get(word)
        if m is None:
            return None
        if m.agent != agent:
            return f"marker {word} of agent {m.agent}"
        if not m.live:
            return f"marker {word} of forgotten turn {m.turn_id}"
        if scoped and viewer is not None and not viewer.admits(m.visibility):
            return f"marker {word} of turn {m.turn_id} visible to {m.visibility!r} only"
        return None

    def hostile(self, agent: str, viewer: Viewer | None) -> list[str]:
        """Markers this agent and viewer must never get back (foreign, forgotten, invisible)."""
        return sorted(w for w in self.marks if self.why_forbidden(w, agent, viewer, True))


# --------------------------------------------------------------------------- probes and results
@dataclass(frozen=True)
class Probe:
    """One question to every read path: whose memory, who is looking, and what is asked."""

    uni: Uniko
    agent: str
    viewer: Viewer | None
    query: str
    #: Node ids to look up directly: ids of every agent's nodes, forgotten ones first.
    probe_ids: tuple[str, ...] = ()
    #: Words that must not be found (see ``Oracle.hostile``): fed to every text and vector search.
    hostile: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()

    @property
    def store(self) -> Store:
        return self.uni.kb.store

    @property
    def handle(self) -> Agent:
        return self.uni.agent(self.agent)

    def filter(self, extra: Filter | None = None) -> Filter | None:
        base = visible_to(self.viewer.admitted_values()) if self.viewer is not None else None
        return all_of(base, extra)

    def texts(self) -> list[str]:
        """The probe query, and the hostile words as one OR-ed query."""
        out = [self.query]
        if self.hostile:
            out.append(" ".join(self.hostile[:MAX_QUERY_WORDS]))
        return out


@dataclass(frozen=True)
class Seen:
    """One thing a read path returned: a node (or a node id it cites) and/or text."""

    node_id: str | None
    text: str = ""
    node: Node | None = None


PathFn = Callable[[Probe], Awaitable[list[Seen]]]


@dataclass(frozen=True)
class ReadPath:
    name: str
    run: PathFn
    #: API methods this path exercises ("Store.find", "Agent.recall", "UnikoRetriever.invoke", ...).
    covers: tuple[str, ...]
    #: Asked on the viewer's behalf: every node and marker must be visible to the viewer.
    scoped: bool = True
    #: A raw id lookup: redacted nodes may come back, blank and flagged.
    tombstones: bool = False


READ_PATHS: dict[str, ReadPath] = {}


def read_path(
    name: str, *covers: str, scoped: bool = True, tombstones: bool = False
) -> Callable[[PathFn], PathFn]:
    def register(fn: PathFn) -> PathFn:
        assert name not in READ_PATHS, name
        READ_PATHS[name] = ReadPath(name, fn, covers, scoped, tombstones)
        return fn

    return register


def of_nodes(nodes: Iterable[Node]) -> list[Seen]:
    return [Seen(n.id, n.model_dump_json(), n) for n in nodes]


def of_bundle(bundle: ContextBundle) -> list[Seen]:
    """Each item (its text) and each Message it cites (by id)."""
    out = []
    for it in bundle.items:
        out.append(Seen(it.node_id, f"{it.content}\n{it.rendered}"))
        out += [Seen(m) for m in it.message_ids()]
    return out


async def audit(path: ReadPath, probe: Probe, oracle: Oracle) -> tuple[list[str], int]:
    """(findings, how many things the path returned) for one path and one probe."""
    try:
        seen = await path.run(probe)
    except AssertionError as exc:
        return [f"{path.name}: {exc}"], 0
    except Exception as exc:  # a probe that cannot complete is a finding, never clean
        return [f"{path.name}: did not complete: {exc!r}"], 0
    wanted = sorted({s.node_id for s in seen if s.node_id and s.node is None})
    loaded = await probe.store.get_many(probe.agent, wanted) if wanted else {}
    bad: list[str] = []
    viewer = probe.viewer
    for s in seen:
        where = f"{path.name} [{probe.agent}, viewer {viewer.participant_id if viewer else None}]"
        if s.node_id is not None:
            node = s.node if s.node is not None else loaded.get(s.node_id)
            if node is None or node.agent != probe.agent:
                owner = node.agent if node is not None else "none (deleted, or another agent's)"
                bad.append(f"{where}: {s.node_id} is not a node of {probe.agent}: owner {owner}")
            else:
                if node.redacted and not path.tombstones:
                    bad.append(f"{where}: {s.node_id} is redacted")
                if path.scoped and viewer is not None and not viewer.admits(node.visibility):
                    bad.append(f"{where}: {s.node_id} has visibility {node.visibility!r}")
        for word in sorted(set(MARKER.findall(s.text.lower()))):
            why = oracle.why_forbidden(word, probe.agent, viewer, path.scoped)
            if why:
                bad.append(f"{where}: {s.node_id or 'text'} carries {why}")
    return bad, len(seen)


# --------------------------------------------------------------------------- Store
@read_path("store.get", "Store.get", scoped=False, tombstones=True)
async def _store_get(p: Probe) -> list[Seen]:
    got = [await p.store.get(p.agent, nid) for nid in p.probe_ids[:MAX_GET_CALLS]]
    return of_nodes(n for n in got if n is not None)


@read_path("store.get_many", "Store.get_many", scoped=False, tombstones=True)
async def _store_get_many(p: Probe) -> list[Seen]:
    return of_nodes((await p.store.get_many(p.agent, p.probe_ids)).values())


@read_path("store.find", "Store.find")
async def _store_find(p: Probe) -> list[Seen]:
    return of_nodes([n for t in Tier for n in await p.store.find(p.agent, t, p.filter(), limit=SCAN)])


@read_path("store.find(include_redacted)", "Store.find", tombstones=True)
async def _store_find_redacted(p: Probe) -> list[Seen]:
    nodes = [
        n for t in Tier for n in await p.store.find(p.agent, t, p.filter(), limit=SCAN, include_redacted=True)
    ]
    return of_nodes(nodes)


@read_path("store.count", "Store.count")
async def _store_count(p: Probe) -> list[Seen]:
    out, total = [], 0
    for t in Tier:
        n = await p.store.count(p.agent, t, p.filter())
        listed = len(await p.store.find(p.agent, t, p.filter(), limit=SCAN))
        assert n == listed, f"count({t.value}) = {n} but find lists {listed} live visible nodes"
        total += n
        if n:
            out.append(Seen(None, f"{t.value}: {n}"))
    every = await p.store.count(p.agent, None, p.filter())
    assert every == total, f"count(all tiers) = {every}, the tiers add up to {total}"
    return out


@read_path("store.text_search", "Store.text_search")
async def _store_text_search(p: Probe) -> list[Seen]:
    hits = [
        h
        for t in Tier
        for q in p.texts()
        for h in await p.store.text_search(p.agent, t, q, k=50, filter=p.filter())
    ]
    return of_nodes(h.node for h in hits)


async def _vectors(p: Probe) -> list[Any]:
    return [await p.uni.kb.embedder.embed_query(q) for q in p.texts()]


@read_path("store.vector_search", "Store.vector_search")
async def _store_vector_search(p: Probe) -> list[Seen]:
    hits = [
        h
        for t in Tier
        for v in await _vectors(p)
        for h in await p.store.vector_search(p.agent, t, v, k=50, filter=p.filter())
    ]
    return of_nodes(h.node for h in hits)


@read_path("store.hybrid_search", "Store.hybrid_search")
async def _store_hybrid_search(p: Probe) -> list[Seen]:
    vecs = await _vectors(p)
    hits = [
        h
        for t in Tier
        for q, v in zip(p.texts(), vecs, strict=True)
        for h in await p.store.hybrid_search(p.agent, t, q, v, k=50, filter=p.filter())
    ]
    return of_nodes(h.node for h in hits)


def ends(pairs: Iterable[tuple[str, str]]) -> list[Seen]:
    """The nodes at both ends of edges; an artifact's HAS_CONTENT edge ends at its bytes'
    digest (``blob:<sha256>``), which is no node."""
    return [Seen(x) for pair in pairs for x in pair if not x.startswith("blob:")]


@read_path("store.neighbors", "Store.neighbors", scoped=False, tombstones=True)
async def _store_neighbors(p: Probe) -> list[Seen]:
    edges = await p.store.neighbors(p.agent, p.probe_ids, None, Direction.BOTH)
    return ends((e.src, e.dst) for e in edges)


@read_path("store.neighbor_keys", "Store.neighbor_keys", scoped=False, tombstones=True)
async def _store_neighbor_keys(p: Probe) -> list[Seen]:
    keys = await p.store.neighbor_keys(p.agent, p.probe_ids, None, Direction.BOTH)
    return ends((src, dst) for src, _, dst in keys)


@read_path("store.get_vectors", "Store.get_vectors", scoped=False)
async def _store_get_vectors(p: Probe) -> list[Seen]:
    return [Seen(nid) for nid in await p.store.get_vectors(p.agent, p.probe_ids)]


# --------------------------------------------------------------------------- graph, topics, summaries
@read_path("graph.neighbourhood", "recall.graph.neighbourhood", scoped=False, tombstones=True)
async def _graph_walk(p: Probe) -> list[Seen]:
    """The graph channel's two-hop walk from every entity and participant of the agent."""
    from uniko_memory.config import RecallGraph
    from uniko_memory.recall.graph import neighbourhood

    seeds = [
        n.id for t in (Tier.ENTITY, Tier.PARTICIPANT) for n in await p.store.find(p.agent, t, limit=SCAN)
    ]
    g = RecallGraph()  # the recall's own walk
    edges = await neighbourhood(p.store, p.agent, seeds, hops=g.hops, max_nodes=g.max_nodes)
    return ends((src, dst) for src, _, dst in edges)


@read_path("cortex.topics", "cortex.topics")
async def _topics(p: Probe) -> list[Seen]:
    """The live topics list (what Phase 1 reads), and the topics the agent's entities belong to."""
    live = await p.store.find(p.agent, Tier.TOPIC, p.filter(IsNull("retired_at")), limit=SCAN)
    ents = [n.id for n in await p.store.find(p.agent, Tier.ENTITY, p.filter(), limit=SCAN)]
    edges = await p.store.neighbors(p.agent, ents, [EdgeType.BELONGS_TO], Direction.OUT) if ents else []
    return of_nodes(live) + [Seen(tid) for tid in sorted({e.dst for e in edges})]


@read_path("cortex.session_summaries", "cortex.session_summaries")
async def _summaries(p: Probe) -> list[Seen]:
    """Every session the viewer may see, and the summaries that summarise it."""
    sessions = [n.id for n in await p.store.find(p.agent, Tier.SESSION, p.filter(), limit=SCAN)]
    edges = (
        await p.store.neighbors(p.agent, sessions, [EdgeType.SUMMARIZES], Direction.IN) if sessions else []
    )
    found = await p.store.get_many(p.agent, sorted({e.src for e in edges}))
    listed = await p.store.find(p.agent, Tier.SUMMARY, p.filter(), limit=SCAN)
    return of_nodes([*found.values(), *listed])


# --------------------------------------------------------------------------- facade
BIG = {"limit": 40, "token_budget": 6000}
GATES_OFF = {"phase1_coverage_gate": 1.0, "phase2_coverage_gate": 1.0}
ALL_PHASES = {"phases": GATES_OFF}


async def _recall(p: Probe, query: str | None = None, **options: Any) -> ContextBundle:
    return await p.handle.recall(query or p.query, viewer=p.viewer, **{**BIG, "use_cache": False, **options})


def _trace_ids(bundle: ContextBundle) -> list[Seen]:
    """Every candidate id the explain trace lists, per channel."""
    channels = (bundle.trace or {}).get("channels", {})
    return [Seen(row["id"]) for rows in channels.values() for row in rows]


@read_path("recall.default", "Agent.recall")
async def _recall_default(p: Probe) -> list[Seen]:
    return of_bundle(await _recall(p))


@read_path("recall.all_phases+explain", "Agent.recall")
async def _recall_all_phases(p: Probe) -> list[Seen]:
    out = []
    for q in p.texts():
        b = await _recall(p, q, explain=True, **ALL_PHASES)
        out += of_bundle(b) + _trace_ids(b)
    return out


@read_path("recall.phase1_merge", "Agent.recall")
async def _recall_merge(p: Probe) -> list[Seen]:
    return of_bundle(await _recall(p, explain=True, phases={**GATES_OFF, "phase1_strategy": "merge"}))


@read_path("recall.query_variants", "Agent.recall")
async def _recall_variants(p: Probe) -> list[Seen]:
    variants = ["keywords", "original", "declarative", "type_anchored"]
    return of_bundle(await _recall(p, intent={"query_variants": variants}, **ALL_PHASES))


@read_path("recall.temporal", "Agent.recall")
async def _recall_temporal(p: Probe) -> list[Seen]:
    q = f"What happened last week? {p.query}"
    return of_bundle(await _recall(p, q, reference_ts=REFERENCE_TS, explain=True, **ALL_PHASES))


@read_path("recall.graph+neighbours", "Agent.recall")
async def _recall_graph(p: Probe) -> list[Seen]:
    q = f"Melanie Google Paris Lake Tahoe Jon {p.query}"
    b = await _recall(
        p, q, graph={"top_k": 40}, channels={"neighbor_parents": 40}, explain=True, **ALL_PHASES
    )
    return of_bundle(b) + _trace_ids(b)


@read_path("recall.scoped", "Agent.recall")
async def _recall_scoped(p: Probe) -> list[Seen]:
    out = []
    if p.sessions:
        out += of_bundle(await _recall(p, sessions=list(p.sessions), **ALL_PHASES))
    if p.participants:
        out += of_bundle(await _recall(p, participants=list(p.participants), **ALL_PHASES))
    return out


@read_path("recall.cache_hit", "Agent.recall", "RecallCache.get")
async def _recall_cache_hit(p: Probe) -> list[Seen]:
    cache = p.uni.recall_cache
    await p.handle.recall(p.query, viewer=p.viewer, **BIG)
    hits = cache.hits
    bundle = await p.handle.recall(p.query, viewer=p.viewer, **BIG)
    assert cache.hits == hits + 1, "the repeated recall was not served by the cache"
    return of_bundle(bundle)


@read_path("agent.wake_up", "Agent.wake_up")
async def _wake_up(p: Probe) -> list[Seen]:
    """The wake-up (no query), whole memory and scoped to the probe's sessions; its L0 line is
    text about the memory (participants, span, counts), no node."""
    from uniko_memory.wakeup import IDENTITY_ID

    bundles = [await p.handle.wake_up(6000, viewer=p.viewer)]
    if p.sessions:
        bundles.append(await p.handle.wake_up(6000, viewer=p.viewer, sessions=list(p.sessions)))
    out = []
    for b in bundles:
        out += [Seen(None, i.content) for i in b.items if i.node_id == IDENTITY_ID]
        out += of_bundle(b.model_copy(update={"items": [i for i in b.items if i.node_id != IDENTITY_ID]}))
    return out


@read_path("agent.profile", "Agent.profile")
async def _profile(p: Probe) -> list[Seen]:
    """The current-state profile of every name the world uses (participants, the hostile words
    as names): Facts about them, as of now and as of the reference moment."""
    names = list(dict.fromkeys([*p.participants, "Melanie", "Jon", "Caroline", *p.hostile[:4]]))
    out = []
    for name in names:
        if name.strip():
            out += of_bundle(await p.handle.profile(name, 6000, viewer=p.viewer))
            out += of_bundle(await p.handle.profile(name, 6000, viewer=p.viewer, reference_ts=REFERENCE_TS))
    return out


@read_path("store.usage", "Store.usage", scoped=False, tombstones=True)
async def _store_usage(p: Probe) -> list[Seen]:
    """Usage is keyed by node: an access recorded on every probe id (every agent's) may land on
    the agent's own nodes only, and only those come back."""
    from uniko_memory.model import UsageDelta

    await p.store.record_usage(p.agent, {nid: UsageDelta(access_count=1) for nid in p.probe_ids})
    return [Seen(nid) for nid in await p.store.usage(p.agent, p.probe_ids)]


class EchoChat:
    """A chat model that repeats the memory it was shown (the worst a model can do with it)."""

    model_id = "echo"

    async def generate(self, messages: Any) -> ChatResult:
        text = messages if isinstance(messages, str) else "\n".join(c for _, c in messages)
        return ChatResult(
            text=text.split("\n\nQuestion:")[0], input_tokens=None, output_tokens=None, model="echo"
        )

    async def structured(self, schema: Any, prompt: Any) -> Any:
        raise NotImplementedError


@read_path("agent.answer", "Agent.answer")
async def _answer(p: Probe) -> list[Seen]:
    ans = await p.handle.answer(p.query, llm=EchoChat(), viewer=p.viewer, **BIG)
    return [*of_bundle(ans.context), Seen(None, ans.text)]


@read_path("uniko_memory.recall", "uniko_memory.recall", "uniko_memory.answer_query")
async def _module_functions(p: Probe) -> list[Seen]:
    """The package's own read functions, called on the knowledge base directly (no facade)."""
    import uniko_memory
    from uniko_memory.query import GeneratedAnswer
    from uniko_memory.recall import RecallConfig

    cfg = p.uni.recall_config.model_copy(update={**BIG, "viewer": p.viewer, "use_cache": False})
    bundle = await uniko_memory.recall(p.uni.kb, p.query, cfg, agent=p.agent, nlp=p.uni.nlp)
    assert isinstance(cfg, RecallConfig)

    async def echo(b: ContextBundle, q: str) -> GeneratedAnswer:
        return GeneratedAnswer(text=b.render())

    ans = await uniko_memory.answer_query(p.uni.kb, p.query, cfg, echo, agent=p.agent, nlp=p.uni.nlp)
    return [*of_bundle(bundle), *of_bundle(ans.context), Seen(None, ans.text)]


@read_path("agent.match_procedures", "Agent.match_procedures", scoped=False)
async def _match_procedures(p: Probe) -> list[Seen]:
    """The procedures matching each state a procedure of the agent names (and an empty state)."""
    from uniko_memory.model import Procedure

    procs = [n for n in await p.store.find(p.agent, Tier.PROCEDURE, limit=SCAN) if isinstance(n, Procedure)]
    states = [{}, *({"last_action_type": a} for a in sorted({n.action_a for n in procs}))]
    out = []
    for state in states:
        out += of_nodes(await p.handle.match_procedures(state))
    return out


@read_path("agent.sessions", "Agent.sessions", scoped=False)
async def _sessions(p: Probe) -> list[Seen]:
    return of_nodes(await p.handle.sessions())


@read_path("session.messages", "Session.messages", scoped=False)
async def _session_messages(p: Probe) -> list[Seen]:
    """Every session's live turns (the LangGraph store lists a namespace's values this way)."""
    handle = p.handle
    return [
        seen
        for node in await handle.sessions()
        for seen in of_nodes(await handle.session(node.external_id).messages())
    ]


@read_path("session.messages(include_redacted)", "Session.messages", scoped=False, tombstones=True)
async def _session_messages_redacted(p: Probe) -> list[Seen]:
    handle = p.handle
    return [
        seen
        for node in await handle.sessions()
        for seen in of_nodes(await handle.session(node.external_id).messages(include_redacted=True))
    ]


@read_path("agent.get_nodes", "Agent.get_nodes", scoped=False, tombstones=True)
async def _get_nodes(p: Probe) -> list[Seen]:
    return of_nodes((await p.handle.get_nodes(p.probe_ids)).values())


@read_path("agent.stats", "Agent.stats", scoped=False)
async def _stats(p: Probe) -> list[Seen]:
    stats = await p.handle.stats()
    for t in Tier:
        live = len(await p.store.find(p.agent, t, limit=SCAN))
        assert stats.get(t.value, 0) == live, (
            f"stats[{t.value}] = {stats.get(t.value, 0)}, live nodes: {live}"
        )
    return [Seen(None, f"{k}: {v}") for k, v in stats.items()]


# --------------------------------------------------------------------------- LangChain / LangGraph
def _docs(docs: Sequence[Any]) -> list[Seen]:
    return [Seen(d.id, f"{d.page_content}\n{d.metadata.get('content', '')}") for d in docs]


@read_path("langchain.retriever", "UnikoRetriever._aget_relevant_documents")
async def _lc_retriever(p: Probe) -> list[Seen]:
    from langchain_uniko import UnikoRetriever

    r = UnikoRetriever(agent=p.handle, limit=40, viewer=p.viewer, token_budget=6000)
    return _docs(await r.ainvoke(p.query))


@read_path("langchain.retriever(sync)", "UnikoRetriever._get_relevant_documents")
async def _lc_retriever_sync(p: Probe) -> list[Seen]:
    from langchain_uniko import UnikoRetriever

    r = UnikoRetriever(agent=p.handle, limit=40, viewer=p.viewer, token_budget=6000, page_content="content")
    return _docs(await asyncio.to_thread(r.invoke, p.query))


def _lg_store(p: Probe) -> Any:
    from langchain_uniko import UnikoStore

    return UnikoStore(p.uni, agent_id=p.agent, viewer=p.viewer, recall_options={"token_budget": 6000})


def _items(items: Iterable[Any]) -> list[Seen]:
    """A LangGraph item: a stored value (keyed by its own key) or a derived memory (keyed by node id)."""
    out = []
    for it in items:
        node_id = it.key if re.fullmatch(r"[a-z]{3}_[0-9a-f]{8,}", str(it.key)) else None
        out.append(Seen(node_id, repr(it.value)))
    return out


@read_path("langgraph.store.search(query)", "UnikoStore.SearchOp", "UnikoStore.abatch")
async def _lg_search(p: Probe) -> list[Seen]:
    return _items(await _lg_store(p).asearch((), query=p.query, limit=40))


@read_path("langgraph.store.search(list)", "UnikoStore.SearchOp", "UnikoStore.batch")
async def _lg_list(p: Probe) -> list[Seen]:
    store = _lg_store(p)
    return _items(await asyncio.to_thread(store.search, (), limit=1000))


@read_path("langgraph.store.get", "UnikoStore.GetOp")
async def _lg_get(p: Probe) -> list[Seen]:
    store = _lg_store(p)
    listed = await store.asearch((), limit=1000)
    out = []
    for it in listed:
        got = await store.aget(it.namespace, it.key)
        assert got is not None, f"listed {it.namespace}/{it.key} but get finds nothing"
        out += _items([got])
    return out


@read_path("langgraph.store.list_namespaces", "UnikoStore.ListNamespacesOp")
async def _lg_namespaces(p: Probe) -> list[Seen]:
    """Namespaces name sessions: only this agent's (as the model knows them) may be listed."""
    namespaces = await _lg_store(p).alist_namespaces()
    for ns in namespaces:
        assert "/".join(ns) in p.sessions, f"namespace {ns} is not a session of {p.agent}"
    return [Seen(None, "/".join(ns)) for ns in namespaces]


@read_path("langchain.memory", "UnikoMemory.aload_memory_variables", "UnikoMemory.load_memory_variables")
async def _lc_memory(p: Probe) -> list[Seen]:
    from langchain_uniko import UnikoMemory

    memory = UnikoMemory(agent=p.handle, limit=40, token_budget=6000, viewer=p.viewer)
    text = (await memory.aload_memory_variables({"input": p.query}))["history"]
    sync = await asyncio.to_thread(memory.load_memory_variables, {"input": p.query})
    return [Seen(None, text), Seen(None, sync["history"])]


@read_path(
    "langchain.chat_history.recall",
    "UnikoChatMessageHistory.arecall_messages",
    "UnikoChatMessageHistory.recall_messages",
)
async def _lc_chat_history_recall(p: Probe) -> list[Seen]:
    from langchain_uniko import UnikoChatMessageHistory

    history = UnikoChatMessageHistory(
        p.handle, session_id="probe-history", limit=40, token_budget=6000, viewer=p.viewer
    )
    shown = await history.arecall_messages(p.query) + await asyncio.to_thread(
        history.recall_messages, p.query
    )
    return [Seen(None, str(m.content)) for m in shown]


@read_path(
    "langchain.chat_history.messages",
    "UnikoChatMessageHistory.aget_messages",
    "UnikoChatMessageHistory.messages",
    scoped=False,
)
async def _lc_chat_history_messages(p: Probe) -> list[Seen]:
    """A session's own turns, as ``Session.messages`` (the history is that conversation's)."""
    from langchain_uniko import UnikoChatMessageHistory

    out: list[Seen] = []
    for node in await p.handle.sessions():
        history = UnikoChatMessageHistory(p.handle, session_id=node.external_id)
        shown = await history.aget_messages() + await asyncio.to_thread(lambda h=history: h.messages)
        out += [Seen(None, str(m.content)) for m in shown]
    return out


@read_path("langchain.middleware", "UnikoMiddleware.awrap_model_call", "UnikoMiddleware.wrap_model_call")
async def _lc_middleware(p: Probe) -> list[Seen]:
    from langchain.agents.middleware import ModelRequest
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import HumanMessage
    from langchain_uniko import UnikoMiddleware

    mw = UnikoMiddleware(p.handle, limit=40, token_budget=6000, viewer=p.viewer, record=False)
    request = ModelRequest(model=FakeListChatModel(responses=["ok"]), messages=[HumanMessage(p.query)])
    shown: list[str] = []

    async def ahandler(req: Any) -> Any:
        shown.append(str(req.system_message.content) if req.system_message else "")

    def handler(req: Any) -> Any:
        shown.append(str(req.system_message.content) if req.system_message else "")

    await mw.awrap_model_call(request, ahandler)
    out = of_bundle(mw.last_bundle) if mw.last_bundle else []
    await asyncio.to_thread(mw.wrap_model_call, request, handler)
    return out + [Seen(None, s) for s in shown]


# --------------------------------------------------------------------------- LlamaIndex
@read_path("llama_index.retriever", "llama.UnikoRetriever._aretrieve", "llama.UnikoRetriever._retrieve")
async def _li_retriever(p: Probe) -> list[Seen]:
    from llama_index.retrievers.uniko import UnikoRetriever

    r = UnikoRetriever(p.handle, similarity_top_k=40, viewer=p.viewer, token_budget=6000)
    nodes = await r.aretrieve(p.query) + await asyncio.to_thread(r.retrieve, p.query)
    return [Seen(n.node.id_, n.node.get_content()) for n in nodes]


@read_path("llama_index.memory_block", "UnikoMemoryBlock._aget")
async def _li_memory(p: Probe) -> list[Seen]:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.memory.uniko import UnikoMemoryBlock

    block = UnikoMemoryBlock(
        agent=p.handle, scope="agent", similarity_top_k=40, token_budget=6000, viewer=p.viewer
    )
    text = await block.aget(messages=[ChatMessage(role=MessageRole.USER, content=p.query)])
    return [Seen(None, text)]


# --------------------------------------------------------------------------- the coverage side
#: Public methods that read no node on a caller's behalf, each with the reason.
NOT_READS: dict[str, str] = {
    # Store: writes, lifecycle, and reads that return no node of any agent
    "Store.unit": "write (unit of work)",
    "Store.delete": "write",
    "Store.redact": "write",
    "Store.set_meta": "write (engine metadata)",
    "Store.record_usage": "write (usage counters); returns a count",
    "Agent.feedback": "write (echo / fizzle counts); returns a count",
    "Agent.audit": "the integrity audit: returns node ids that leaked (the read paths it probes are here)",
    "Store.close": "lifecycle",
    "Store.compact": "maintenance (makes deletions physical); returns nothing",
    "Store.dim": "the vector width; no node",
    "Store.generation": "a per-agent write counter; no node",
    "Store.agents": "the tenant names; no node content",
    "Store.get_meta": "engine metadata (schema and model pins); no node",
    "Store.get_blob": "content-addressed bytes: the caller must already hold the sha256 of the content",
    # facade: handles, writes, lifecycle
    "Agent.session": "a handle; reads nothing",
    "Agent.flush": "waits for background writes",
    "Agent.consolidate": "write (P4 cycle, then the gated sweep)",
    "Agent.finalize_session": "write (chunks and summary); returns counts",
    "Agent.maintain_sessions": "write (closes idle sessions); returns this agent's session ids",
    "Agent.sweep": "write (cortex sweep); returns counts",
    "Agent.report_outcome": "write to the caller's own Episode, found through store.unit(agent)",
    "Agent.record_procedure_use": "write to a Procedure, found through store.unit(agent)",
    "Agent.forget_turn": "write (redaction)",
    "Agent.delete_turn": "write (deletion)",
    "Agent.forget_participant": "write (redaction or deletion)",
    "Agent.forget_session": "write (redaction or deletion of a session's turns); returns counts",
    "Agent.uniko": "a handle (the engine); reads nothing",
    "Agent.config": "the engine's config; no node",
    "Agent.ingest_artifact": "write (a document and its chunks); returns its ids and counts",
    "Session.observe": "write",
    "Session.observe_each": "write (its result holds counts, positions and reasons, no memory)",
    "Session.commit_unit": "write",
    "Session.unit": "a builder for a write",
    "Session.submit": "write (streaming ingest)",
    "Session.flush": "waits for background writes",
    "Session.finalize": "write (chunks and summary); returns counts",
    "Session.uniko": "a handle (the engine); reads nothing",
    "Uniko.open": "constructor",
    "Uniko.open_weaviate": "constructor",
    "Uniko.in_memory": "constructor",
    "Uniko.from_knowledge_base": "constructor",
    "Uniko.open_sync": "constructor",
    "Uniko.in_memory_sync": "constructor",
    "Uniko.agent": "a handle; reads nothing",
    "Uniko.health": "pipeline and model health; no node",
    "Uniko.run_sync": "runs the caller's coroutine",
    "Uniko.run_async": "runs the caller's coroutine",
    "Uniko.loop": "the engine's event loop; no node",
    "Uniko.pipeline": "the engine's pipeline (queues, exclusive cycles, health); no node",
    "Uniko.triple_source": "configuration",
    "Uniko.summary_chat": "configuration",
    "Uniko.last_sweep": "the latest sweep's counts per agent; no node",
    "Uniko.close": "lifecycle",
    "Uniko.close_sync": "lifecycle",
    "Uniko.set_chat_model": "configuration",
    # integrations: writes and helpers
    "UnikoStore.PutOp": "write (a put ingests a turn; a None value forgets it)",
    "UnikoMemory.save_context": "write",
    "UnikoMemory.asave_context": "write",
    "UnikoMemory.clear": "write (forgets the session)",
    "UnikoMemory.aclear": "write (forgets the session)",
    "UnikoMemory.memory_variables": "the variable names",
    "UnikoMemory.supports_clear": "a capability flag",
    "UnikoMiddleware.after_agent": "write (records the run's turns)",
    "UnikoMiddleware.aafter_agent": "write (records the run's turns)",
    "UnikoMemoryBlock._aput": "write",
    "UnikoMemoryBlock.resolved_scope": "the scope setting",
    "UnikoRetriever.k": "the deprecated name of the item count",
    "llama.UnikoRetriever.k": "the deprecated name of the item count",
    "UnikoChatMessageHistory.add_messages": "write",
    "UnikoChatMessageHistory.aadd_messages": "write",
    "UnikoChatMessageHistory.clear": "write (forgets the session)",
    "UnikoChatMessageHistory.aclear": "write (forgets the session)",
    "UnikoMemoryBlock.atruncate": "trims text it is given; reads nothing",
}


def _own_methods(cls: type, prefix: str) -> set[str]:
    """Public callables a class defines itself, plus the framework hooks it overrides (``_aget``)."""
    out = set()
    for name, value in vars(cls).items():
        if name.startswith("__") or not (
            callable(value) or isinstance(value, property | classmethod | staticmethod)
        ):
            continue
        if name.startswith("_") and not any(name in vars(base) for base in cls.__mro__[1:]):
            continue
        if name in ("model_post_init",) or name.startswith("model_"):
            continue
        out.add(f"{prefix}.{name}")
    return out


def _protocol_methods(proto: type) -> set[str]:
    skip = {"_is_protocol", "_is_runtime_protocol"}
    return {
        f"Store.{name}"
        for name, value in vars(proto).items()
        if not name.startswith("_") and name not in skip and (callable(value) or isinstance(value, property))
    }


def _facade_methods(cls: type, prefix: str) -> set[str]:
    """Public methods of a facade class; a ``*_sync`` twin counts as its async verb."""
    out = set()
    for name, value in inspect.getmembers(cls):
        if name.startswith("_") or not (callable(value) or isinstance(value, property)):
            continue
        twin = name.removesuffix("_sync")
        out.add(f"{prefix}.{twin if twin != name and hasattr(cls, twin) else name}")
    return out


def api_read_surface() -> set[str]:
    """Every public read-capable method of the Store protocol, the facade and the integrations."""
    from langchain_uniko import (
        UnikoChatMessageHistory,
        UnikoMemory,
        UnikoMiddleware,
        UnikoRetriever,
        UnikoStore,
    )
    from langgraph.store.base import Op
    from llama_index.memory.uniko import UnikoMemoryBlock
    from llama_index.retrievers.uniko import UnikoRetriever as LlamaRetriever

    surface = _protocol_methods(Store)
    for cls in (Uniko, Agent, Session):
        surface |= _facade_methods(cls, cls.__name__)
    surface |= _own_methods(UnikoRetriever, "UnikoRetriever")
    surface |= _own_methods(UnikoMemory, "UnikoMemory")
    surface |= _own_methods(UnikoMiddleware, "UnikoMiddleware")
    surface |= _own_methods(UnikoChatMessageHistory, "UnikoChatMessageHistory")
    surface |= _own_methods(LlamaRetriever, "llama.UnikoRetriever")
    surface |= _own_methods(UnikoMemoryBlock, "UnikoMemoryBlock")
    # UnikoStore is one batch entry point: every LangGraph operation type is its own read path.
    surface |= {f"UnikoStore.{op.__name__}" for op in get_args(Op)}
    surface |= {m for m in _own_methods(UnikoStore, "UnikoStore") if m.split(".")[1] in ("batch", "abatch")}
    # The package's exported read functions (``uniko_memory.recall``, ``answer_query``).
    import uniko_memory

    surface |= {
        f"uniko_memory.{name}"
        for name in uniko_memory.__all__
        if inspect.isfunction(getattr(uniko_memory, name))
    }
    # Conceptual paths that are not one method: the recall cache, the graph walk, topics, summaries.
    surface |= {"RecallCache.get", "recall.graph.neighbourhood", "cortex.topics", "cortex.session_summaries"}
    return surface


def covered() -> set[str]:
    return {c for path in READ_PATHS.values() for c in path.covers}


def uncovered() -> list[str]:
    """API read methods with no read path and no reason in ``NOT_READS``."""
    return sorted(api_read_surface() - covered() - set(NOT_READS))
