"""UnikoStore against LangGraph's ``InMemoryStore``: random sequences of put / get / search /
delete / list_namespaces, applied to both side by side, must agree (issue 16).

What is compared, after every operation:

* ``get``: the same item (namespace, key, value) or None in both.
* ``search`` without a query: the same items in the same order, page by page (``limit``/``offset``),
  under a namespace prefix and a ``filter`` (equality, nested dicts, lists, and every operator
  ``InMemoryStore`` knows: ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``).
* ``search`` with a query (issue 40.3): ranking differs (uniko recalls, ``InMemoryStore`` without an
  index does not rank), so the *count* must be the reference's for the same prefix, filter,
  ``limit`` and ``offset`` (the filter is applied before the limit, never after), and every item
  must be a current item of the reference under the prefix and matching the filter, with its current
  value; when the page holds every match, the same set of keys. Recalled items (a score) come
  first, best first, then the unranked matches (``score=None``). No derived memory (an observation,
  a chunk...: keyed by node id) comes back by default, nothing returned may quote a value that was
  overwritten or deleted, and no key comes back twice.
* read after write: right after a ``put``, ``get`` returns the value, a search without a query
  lists it, and a search with a query for its words, filtered to it, returns it with a real score.
* ``list_namespaces`` (prefix, suffix, ``max_depth``, ``limit``, ``offset``): the same list, against
  the reference's namespaces that hold items. ``InMemoryStore`` keeps a namespace in its table once
  a get or delete has *touched* it (its table is a ``defaultdict``) and after its last item is deleted;
  those empty entries are not namespaces of any item (LangGraph's Postgres and SQLite stores do not
  list them either), so the reference drops them: right after a read for a namespace it never wrote,
  and in a pruned copy for ``list_namespaces``.

Labels include the characters the namespace encoding escapes ("/", "%", ":", "\\", "#"), blanks and
non-ASCII letters. Each example runs on a fresh agent of the shared in-memory engine; the real
ingest pipeline and recall run (the embedder is the suite's bag of words).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st
from langchain_uniko import UnikoStore
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

from uniko_memory.facade import Uniko

_agents = itertools.count()

#: Short labels over the characters that matter to the encoding, and a pool that always holds the
#: pairs that used to collide.
LABEL = st.text(alphabet="ab/%:\\# é中", min_size=1, max_size=3)
FIXED = [("m", "a", "b"), ("m", "a/b"), ("m", "a%2Fb"), ("m", "a"), ("m:a", "b"), ("m", "a\\b")]
NAMESPACES = st.lists(
    st.one_of(st.sampled_from(FIXED), st.lists(LABEL, min_size=1, max_size=3).map(tuple)),
    min_size=2,
    max_size=5,
    unique=True,
)
KEYS = st.sampled_from(["k", "k#2", "k:1", "%", "é"])
WORDS = ["kayak", "violin", "garden", "pottery", "Lisbon"]
TOPICS = ["pets", "work", "travel"]

NS = st.integers(0, 10**6)  # an index into the example's namespace pool
PUT = st.tuples(st.just("put"), NS, KEYS, st.sampled_from(WORDS), st.sampled_from(TOPICS), st.integers(0, 3))
REPUT = st.tuples(st.just("reput"), NS, KEYS)  # the current value again: a no-op for both
#: A new value for an item that exists (``pick`` chooses it), so overwrites are frequent.
UPDATE = st.tuples(
    st.just("update"),
    NS,
    st.integers(0, 10**6),
    st.sampled_from(WORDS),
    st.sampled_from(TOPICS),
    st.integers(0, 3),
)
DELETE = st.tuples(st.just("delete"), NS, KEYS)
GET = st.tuples(st.just("get"), NS, KEYS)
FILTERS = st.sampled_from(
    [
        None,
        {"topic": "pets"},
        {"n": {"$gte": 2}},
        {"n": 1, "topic": "work"},
        {"n": {"$ne": 0}},
        {"tags": ["t1"]},
        {"tags": []},
        {"n": {"$gt": 2}},
        {"n": {"$lt": 1}},
        {"n": {"$gte": 1, "$lte": 2}},
        {"topic": {"$eq": "travel"}, "n": {"$gt": 0}},
        {"topic": {"$ne": "pets"}},
        {"meta": {"topic": "work"}},
        {"meta": {"topic": "pets", "n": 3}},
    ]
)
DEPTH = st.integers(0, 3)  # the prefix: this many labels of a pool namespace
SEARCH = st.tuples(st.just("search"), NS, DEPTH, FILTERS, st.integers(1, 6), st.integers(0, 3))
#: A query names a word, or (``pick``) the word and marker of an earlier put under a prefix of that
#: put's namespace: mostly of a value since overwritten or deleted, when there is one.
QUERY = st.tuples(
    st.just("query"),
    NS,
    DEPTH,
    st.one_of(st.none(), FILTERS),
    st.integers(1, 6),
    st.sampled_from([*WORDS, "note about kayak"]),
    st.one_of(st.none(), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.sampled_from([0, 0, 1, 2]),  # offset
)
LIST = st.tuples(
    st.just("list"),
    NS,
    st.integers(0, 2),  # prefix depth
    st.integers(0, 2),  # suffix depth
    st.one_of(st.none(), st.integers(1, 3)),  # max_depth
    st.integers(1, 6),
    st.integers(0, 2),
)
FLUSH = st.tuples(st.just("flush"), NS)  # background work done: observations, vectors
FINALIZE = st.tuples(st.just("finalize"), NS)  # the namespace's session: transcript chunks, summary
#: A few puts first, then anything.
OPS = st.tuples(
    st.lists(PUT, min_size=1, max_size=3),
    st.lists(
        st.one_of(
            PUT, UPDATE, UPDATE, REPUT, DELETE, GET, SEARCH, QUERY, QUERY, QUERY, LIST, FLUSH, FINALIZE
        ),
        min_size=2,
        max_size=12,
    ),
).map(lambda parts: parts[0] + parts[1])


class Reference:
    """``InMemoryStore``, without the empty namespaces its reads and deletes leave behind."""

    def __init__(self) -> None:
        self.store = InMemoryStore()

    def _untouched(self, ns: tuple[str, ...], call: Any) -> Any:
        known = ns in self.store._data
        result = call()
        if not known and not self.store._data.get(ns):
            self.store._data.pop(ns, None)
        return result

    def get(self, ns: tuple[str, ...], key: str) -> Item | None:
        return self._untouched(ns, lambda: self.store.get(ns, key))

    def delete(self, ns: tuple[str, ...], key: str) -> None:
        self._untouched(ns, lambda: self.store.delete(ns, key))

    def list_namespaces(self, **kwargs: Any) -> list[tuple[str, ...]]:
        live = InMemoryStore()
        live._data = defaultdict(dict, {ns: items for ns, items in self.store._data.items() if items})
        return live.list_namespaces(**kwargs)


def _cells(items: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(tuple(i.namespace), i.key, i.value) for i in items]


def _is_derived(item: Any) -> bool:
    return {"content", "rendered", "kind", "sources"} <= set(item.value)


def _check_query(
    got: list[Any],
    ref: Reference,
    prefix: tuple[str, ...],
    flt: dict[str, Any] | None,
    limit: int,
    offset: int,
    retired: set[str],
) -> None:
    matches = _cells(ref.store.search(prefix, filter=flt, limit=10**6))
    current = {(ns, key): value for ns, key, value in matches}
    want = ref.store.search(prefix, filter=flt, limit=limit, offset=offset)
    assert not [h for h in got if _is_derived(h)], f"a derived memory without include_derived: {got}"
    keys = [(tuple(h.namespace), h.key) for h in got]
    assert len(keys) == len(set(keys)), f"a key came back twice: {keys}"
    assert len(got) == len(want), (
        f"{len(got)} item(s) where InMemoryStore finds {len(want)} of {len(matches)} match(es) "
        f"(filter {flt}, limit {limit}, offset {offset}): {keys}"
    )
    if offset == 0 and len(matches) <= limit:
        assert set(keys) == set(current), "the page holds every match: the same keys"
    ranked = [h.score for h in got if h.score is not None]
    assert [h.score is not None for h in got] == [True] * len(ranked) + [False] * (len(got) - len(ranked))
    assert ranked == sorted(ranked, reverse=True), f"recalled items out of order: {ranked}"
    if currently_in_test_context():
        event(f"query: {len(ranked)} ranked of {len(got)}" + (", filtered" if flt else ""))
    for hit in got:
        ns = tuple(hit.namespace)
        assert ns[: len(prefix)] == prefix, f"{ns} is outside the prefix {prefix}"
        text = str(hit.value)
        stale = [token for token in retired if token in text]
        assert not stale, f"search returned an overwritten or deleted value {stale}: {hit}"
        assert current.get((ns, hit.key)) == hit.value, f"not a current item matching {flt}: {hit}"


def _check_read_after_write(store: UnikoStore, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
    """A put is visible to the very next reads: get, the listing, and a search with a query."""
    got = store.get(ns, key)
    assert got is not None and got.value == value, f"get right after put: {got}"
    listed = store.search(ns, filter={"token": value["token"]})
    assert _cells(listed) == [(ns, key, value)], f"listing right after put: {listed}"
    query = f"{value['content']} {value['token']}"
    hits = store.search(ns, query=query, filter={"token": value["token"]}, limit=2)
    assert _cells(hits) == [(ns, key, value)], f"search right after put: {hits}"
    assert hits[0].score is not None and hits[0].score > 0.0, f"no real score right after put: {hits[0]}"


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pool=NAMESPACES, ops=OPS)
def test_unikostore_matches_inmemorystore(
    uni: Uniko, pool: list[tuple[str, ...]], ops: list[tuple[Any, ...]]
) -> None:
    agent = f"differential-{next(_agents)}"
    store = UnikoStore(uni, agent_id=agent)
    ref = Reference()
    tokens = itertools.count()
    retired: set[str] = set()  # marker words of values no longer current
    written: set[tuple[str, ...]] = set()
    history: list[tuple[tuple[str, ...], str]] = []  # (namespace, "word marker") of every put
    try:
        for op in ops:
            kind, ns = op[0], pool[op[1] % len(pool)]
            if kind == "update":
                items = ref.store.search((), limit=10**6)
                if not items:
                    continue
                chosen = items[op[2] % len(items)]
                kind, ns, op = "put", tuple(chosen.namespace), ("put", 0, chosen.key, *op[3:])
            if kind in ("put", "reput", "delete"):
                key = op[2]
                before = ref.get(ns, key)
                if kind == "put":
                    _, _, _, word, topic, n = op
                    token = f"zq{next(tokens)}x"
                    history.append((ns, f"{word} {token}"))
                    value: dict[str, Any] | None = {
                        "content": f"Priya told Tomas about her {word}, code {token}.",
                        "topic": topic,
                        "n": n,
                        "tags": ["t1"] if n % 2 else [],
                        "meta": {"topic": topic, "n": n},
                        "token": token,
                    }
                elif kind == "reput":
                    value = before.value if before is not None else None
                    if value is None:
                        continue
                else:
                    value = None
                if value is None:
                    store.delete(ns, key)
                    ref.delete(ns, key)
                else:
                    store.put(ns, key, value)
                    ref.store.put(ns, key, value)
                    written.add(ns)
                    if kind == "put" and op[5] % 2:  # half the puts: read back at once
                        _check_read_after_write(store, ns, key, value)
                if before is not None and before.value != value:
                    retired.add(before.value["token"])
                    event("overwritten" if value is not None else "deleted")
                continue
            if kind == "flush":
                uni.agent(agent).flush_sync()
            elif kind == "finalize":
                if ns in written:
                    uni.agent(agent).session(UnikoStore.session_of(ns)).finalize_sync()
            elif kind == "get":
                got, want = store.get(ns, op[2]), ref.get(ns, op[2])
                assert (got and _cells([got])) == (want and _cells([want])), op
            elif kind == "search":
                _, _, depth, flt, limit, offset = op
                prefix = ns[:depth]
                got_items = store.search(prefix, filter=flt, limit=limit, offset=offset)
                want_items = ref.store.search(prefix, filter=flt, limit=limit, offset=offset)
                assert _cells(got_items) == _cells(want_items), op
            elif kind == "query":
                _, _, depth, flt, limit, query, pick, offset = op
                stale = [(n, q) for n, q in history if q.split()[-1] in retired]
                if pick is not None and history:
                    choices = stale if stale and pick % 4 else history
                    ns, query = choices[pick % len(choices)]
                prefix = ns[:depth]
                got_items = store.search(prefix, query=query, filter=flt, limit=limit, offset=offset)
                _check_query(got_items, ref, prefix, flt, limit, offset, retired)
            else:
                _, _, pdepth, sdepth, max_depth, limit, offset = op
                kwargs: dict[str, Any] = {
                    "prefix": ns[:pdepth] or None,
                    "suffix": ns[len(ns) - sdepth :] if sdepth else None,
                    "max_depth": max_depth,
                    "limit": limit,
                    "offset": offset,
                }
                assert store.list_namespaces(**kwargs) == ref.list_namespaces(**kwargs), (op, kwargs)
        # the whole state at the end, listed and read back
        everything = ref.store.search((), limit=10**6)
        assert _cells(store.search((), limit=10**6)) == _cells(everything)
        assert store.list_namespaces(limit=10**6) == ref.list_namespaces(limit=10**6)
    finally:
        uni.agent(agent).flush_sync()


#: Issue 40.3's memory: five of Alice's values, one of Bob's.
PEOPLE = {
    ("users", "alice"): [
        ("home", "Alice lives in Lisbon near the river.", "place", 0),
        ("job", "Alice works at Northwind Analytics.", "work", 1),
        ("cat", "Alice has a grey cat named Biscuit.", "pet", 2),
        ("violin", "Alice plays the violin on Sundays.", "hobby", 3),
        ("pottery", "Alice likes pottery and kayaking.", "hobby", 4),
    ],
    ("users", "bob"): [("home", "Bob lives in Porto by the sea.", "place", 5)],
}
PEOPLE_FILTERS = [
    None,
    {"kind": "place"},
    {"kind": "pet"},
    {"kind": {"$ne": "hobby"}},
    {"n": {"$gte": 3}},
    {"n": {"$lt": 2}},
    {"kind": "hobby", "n": {"$gt": 3}},
    {"kind": "fish"},
]


def test_filtered_limited_searches_match_inmemorystore(uni: Uniko) -> None:
    """The filter applies before ``limit`` and ``offset``, with and without a query (issue 40.3):
    ``filter={"kind": "pet"}, limit=1`` finds Alice's cat whatever recall ranks first."""
    store = UnikoStore(uni, agent_id=f"differential-{next(_agents)}")
    ref = Reference()
    for ns, rows in PEOPLE.items():
        for key, content, kind, n in rows:
            value = {"content": content, "kind": kind, "n": n, "token": f"{ns[-1]}-{key}"}
            store.put(ns, key, value)
            ref.store.put(ns, key, value)
    for settled in (False, True):  # right after the puts, then after the background work
        if settled:
            store.uni.agent(store.agent_id).flush_sync()
        for prefix, flt, limit, offset in itertools.product(
            [(), ("users",), ("users", "alice")], PEOPLE_FILTERS, [1, 3], [0, 1, 4]
        ):
            got = store.search(prefix, filter=flt, limit=limit, offset=offset)
            assert _cells(got) == _cells(ref.store.search(prefix, filter=flt, limit=limit, offset=offset))
            for query in ("Where does Alice live?", "pets"):
                got = store.search(prefix, query=query, filter=flt, limit=limit, offset=offset)
                _check_query(got, ref, prefix, flt, limit, offset, set())
