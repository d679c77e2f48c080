"""UnikoStore against LangGraph's ``InMemoryStore``: random sequences of put / get / search /
delete / list_namespaces, applied to both side by side, must agree (issue 16).

What is compared, after every operation:

* ``get``: the same item (namespace, key, value) or None in both.
* ``search`` without a query: the same items in the same order, page by page (``limit``/``offset``),
  under a namespace prefix and a ``filter``.
* ``search`` with a query: ranking differs (uniko recalls, ``InMemoryStore`` without an index does
  not rank), so every stored value it returns must be a current item of the reference under the prefix
  and matching the filter, with its current value; a derived memory (an observation, a chunk...) must
  lie under the prefix and match the filter; nothing returned may quote a value that was overwritten
  or deleted, and no key comes back twice.
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

from hypothesis import HealthCheck, event, given, settings
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


def _matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """The generated filters' meaning (equality, ``$gte``, ``$ne``, list equality)."""
    for field, cond in (flt or {}).items():
        actual = value.get(field)
        if isinstance(cond, dict):
            (op, expected), *_ = cond.items()
            ok = actual is not None and actual >= expected if op == "$gte" else actual != expected
            if not ok:
                return False
        elif actual != cond:
            return False
    return True


def _check_query(
    got: list[Any],
    ref: Reference,
    prefix: tuple[str, ...],
    flt: dict[str, Any] | None,
    limit: int,
    retired: set[str],
    written: set[tuple[str, ...]],
) -> None:
    current = {
        (ns, key): value for ns, key, value in _cells(ref.store.search(prefix, filter=flt, limit=10**6))
    }
    assert len(got) <= limit
    stored = [(tuple(h.namespace), h.key) for h in got if not _is_derived(h)]
    assert len(stored) == len(set(stored)), f"a key came back twice: {stored}"
    event(f"query: {len(stored)} stored value(s), {len(got) - len(stored)} derived")
    for hit in got:
        ns = tuple(hit.namespace)
        assert ns[: len(prefix)] == prefix, f"{ns} is outside the prefix {prefix}"
        text = str(hit.value)
        stale = [token for token in retired if token in text]
        assert not stale, f"search returned an overwritten or deleted value {stale}: {hit}"
        if _is_derived(hit):
            assert ns in written or ns == (), f"derived memory under a namespace never written: {hit}"
            assert _matches(hit.value, flt)
        else:
            assert current.get((ns, hit.key)) == hit.value, f"not a current item: {hit}"


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
                _, _, depth, flt, limit, query, pick = op
                stale = [(n, q) for n, q in history if q.split()[-1] in retired]
                if pick is not None and history:
                    choices = stale if stale and pick % 4 else history
                    ns, query = choices[pick % len(choices)]
                prefix = ns[:depth]
                got_items = store.search(prefix, query=query, filter=flt, limit=limit)
                _check_query(got_items, ref, prefix, flt, limit, retired, written)
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
