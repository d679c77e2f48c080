"""``UnikoStore``: a LangGraph ``BaseStore`` whose search is uniko-memory's recall.

Needs ``pip install "langchain-uniko[store]"`` (``langgraph.store.base`` lives in
``langgraph-checkpoint``). Over 400 lines on purpose: one ``BaseStore`` whose operations share the
per-namespace record scan; the namespace encoding lives in ``_namespaces.py``.

Mapping:

* **one agent.** A store reads and writes the memory of one uniko agent, ``agent_id=``
  (required): nothing it returns comes from another agent. For one memory per user, open one
  store per user (``UnikoStore(uni, agent_id=user_id)``).
* **namespace → session.** A namespace names one session of that agent: its labels joined by
  ``/``, where a label's own ``%`` and ``/`` (and a label made only of blanks) are written as
  ``%XX`` escapes, so ``("memories", "alice/home")`` → ``"memories/alice%2Fhome"`` and
  ``("memories", "alice", "home")`` → ``"memories/alice/home"`` stay apart
  (``UnikoStore.session_of`` / ``namespace_of`` convert). Labels follow LangGraph's rules
  (non-empty strings without ``.`` or NUL, checked for ops passed to ``batch`` too).
* **put → ingest.** The value is stored as one turn (its text: the first of ``text_fields``
  present, else ``"k: v; ..."``), so it is extracted, embedded and recalled like any message;
  the value itself rides along in the message metadata, so ``get`` returns it unchanged.
  A put with a new value for an existing key stores the new version first, then forgets the
  older ones (``Agent.forget_turn``: the turn and what was derived only from it), so neither
  ``get`` nor ``search`` can return an overwritten value; ``created_at`` is kept from the key's
  first put. The same value again is a no-op. ``delete`` forgets every version.
* **search → the stored values under the prefix that match ``filter``**, as LangGraph's
  ``InMemoryStore`` filters them (equality, nested dicts, lists element by element, the operators
  ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``), ``offset`` and ``limit`` applied after
  the filter. Without ``query`` they are listed namespace by namespace in the order they were
  first written, each in the order its keys were first put (as ``InMemoryStore`` does). With
  ``query``, uniko's recall (over the sessions that hold a match) ranks them: the values it
  recalls come first, best ``score`` first (recall's relevance: the query's cosine with the
  value's vector, in [0, 1]), then the other matches in listing order with ``score=None`` (as
  ``InMemoryStore`` fills with items it has no vector for). So a search returns
  ``min(limit, matches - offset)`` items, with or without a query. Recall is paged (a larger
  ``limit`` while too few of its items match, at most ``RecallPacking.max_candidates``, a few
  recalls), so a narrow filter costs a bounded number of recalls.
* **read after write.** A search with ``query`` first waits, at most ``search_wait`` seconds, for
  the background work of the store's earlier puts (their Observations and vectors: what
  ``Agent.flush`` waits for), so a value just put is ranked and scored as after a flush; past the
  wait the search goes on with what is stored (a value without its vector yet is found by its
  words, with ``score`` 0.0). ``get`` and a search without ``query`` see a put at once.
* **derived memory, opt-in** (``include_derived=True``): a search with ``query`` also returns
  what recall derived (Observations, Facts, chunks drawn from several values or from
  conversations the middleware wrote): keyed by node id (a key never ``put``), with
  ``{"content", "rendered", "kind", "sources", "timestamp"}`` under the namespace of their
  session (``()`` for agent-wide memories such as Facts, which only the prefix ``()`` reaches),
  when they match the filter. Off by default: LangGraph code reads ``item.value`` in the schema
  it stored.
* ``list_namespaces`` lists the namespaces that hold stored values. TTLs are not supported.
* **limits.** A batch puts at most ``IngestConfig.max_unit_turns`` values, and each must pass
  the engine's turn limits (``max_turn_chars``, ``max_metadata_bytes``): a batch over a limit
  raises uniko's ``ValidationError`` before any of its operations runs.
* **stores written before namespaces were escaped** read on unchanged where no label holds
  ``/`` or ``%`` (the session and turn names are the same). A value whose namespace had such a
  label lives in a session named by the old flat join: it is not migrated, and never read as a
  value of another namespace (every read checks the namespace recorded with the value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from uniko_memory.errors import IdConflict, ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn, check_session_id, check_turn
from uniko_memory.model import Message, Viewer
from uniko_memory.recall import RecallItem

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError('UnikoStore needs langgraph-checkpoint: pip install "langchain-uniko[store]"') from None

from ._common import as_viewer, on_engine, on_engine_sync
from ._namespaces import (
    Namespace,
    check_labels,
    check_op,
    is_version,
    namespace_of,
    ns_matches,
    session_of,
    turn_base,
)

__all__ = ["UnikoStore"]

_META = "langgraph"


# ---------------------------------------------------------------------- values
def _ident(message: Message) -> tuple[Namespace, str] | None:
    """(namespace, key) a message stores a value of, or None when it stores none."""
    meta = message.metadata.get(_META)
    if message.redacted or not isinstance(meta, Mapping) or "value" not in meta:
        return None
    namespace, key = meta.get("namespace"), meta.get("key")
    if not isinstance(namespace, list | tuple) or not all(isinstance(x, str) for x in namespace):
        return None
    return (tuple(namespace), key) if isinstance(key, str) else None


def _created(versions: list[Message]) -> datetime:
    stamp = versions[-1].metadata[_META].get("created_at")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp)
        except ValueError:
            pass
    return versions[0].timestamp


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether a stored value passes a search ``filter``, as LangGraph's ``InMemoryStore`` decides
    (``langgraph.store.memory``'s ``_compare_values``, private there, so matched here)."""
    return all(_compare(value.get(field), cond) for field, cond in (flt or {}).items())


def _compare(actual: Any, cond: Any) -> bool:
    """A dict with a ``$`` key: operators, all of which must hold; another dict: a nested match;
    a list or tuple: the same length, element by element; anything else: equality."""
    if isinstance(cond, Mapping):
        if any(str(k).startswith("$") for k in cond):
            return all(_operator(actual, op, expected) for op, expected in cond.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in cond.items())
    if isinstance(cond, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(cond)
            and all(_compare(a, c) for a, c in zip(actual, cond, strict=True))
        )
    return bool(actual == cond)


def _operator(actual: Any, op: str, expected: Any) -> bool:
    """``$eq`` / ``$ne``: equality; ``$gt`` / ``$gte`` / ``$lt`` / ``$lte``: as numbers
    (``float()`` of both, as ``InMemoryStore``). Where ``InMemoryStore`` raises instead, two
    strings compare as strings (ISO dates: as LangGraph's Postgres store orders them) and anything
    else (a missing field, a string against a number) does not match."""
    if op == "$eq":
        return bool(actual == expected)
    if op == "$ne":
        return bool(actual != expected)
    compare = _ORDER.get(op)
    if compare is None:
        raise ValueError(f"Unsupported operator: {op}")
    try:
        return compare(float(actual), float(expected))
    except (TypeError, ValueError, OverflowError):
        return isinstance(actual, str) and isinstance(expected, str) and compare(actual, expected)


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


class UnikoStore(BaseStore):
    """Long-term LangGraph memory on uniko-memory
    (``create_agent(..., store=UnikoStore(uni, agent_id="assistant"))``).

    Args:
        uni: the ``Uniko`` engine (``Uniko.open_sync(path)`` for sync graphs).
        agent_id: the one agent whose memory the store reads and writes (required).
        sender: who "says" a stored value when it has no ``"sender"`` field.
        text_fields: value fields holding the text to remember, in order of preference.
        viewer: a participant id or ``Viewer`` applied to every search.
        recall_options: extra ``RecallConfig`` overrides for searches (e.g. ``token_budget``).
        include_derived: a search with ``query`` also returns derived memories (Observations,
            Facts, chunks: keyed by node id, with the value ``{"content", "rendered", "kind",
            "sources", "timestamp"}``), besides the stored values. Off by default: LangGraph code
            reads ``item.value`` in the schema it ``put``.
        search_wait: at most this many seconds a search with ``query`` waits for the background
            work of the store's earlier puts (their Observations and vectors), so a value just
            put ranks and scores as after ``Agent.flush``; 0 searches at once.
    """

    def __init__(
        self,
        uni: Uniko,
        *,
        agent_id: str,
        sender: str = "user",
        text_fields: Sequence[str] = ("content", "text", "memory", "data"),
        viewer: Viewer | str | None = None,
        recall_options: Mapping[str, Any] | None = None,
        include_derived: bool = False,
        search_wait: float = 5.0,
    ) -> None:
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ValidationError(
                f"UnikoStore needs agent_id=..., the uniko agent whose memory it reads and writes "
                f"(got {agent_id!r}); a store never reads across agents: open one store per agent"
            )
        self.uni = uni
        self.agent_id = agent_id
        self.sender = sender
        self.text_fields = tuple(text_fields)
        self.viewer = as_viewer(viewer)
        if isinstance(search_wait, bool) or not isinstance(search_wait, int | float) or not search_wait >= 0:
            raise ValidationError(f"search_wait must be a number of seconds >= 0 (got {search_wait!r})")
        self.recall_options = dict(recall_options or {})
        self.include_derived = bool(include_derived)
        self.search_wait = float(search_wait)
        self._agent = uni.agent(agent_id)
        self._unsettled = False  # a put since the last search waited for its background work

    @staticmethod
    def session_of(namespace: Sequence[str]) -> str:
        """The session id (of the store's agent) that ``namespace`` names."""
        check_labels(namespace, put=True)
        return session_of(tuple(namespace))

    @staticmethod
    def namespace_of(session_id: str) -> tuple[str, ...] | None:
        """The namespace a session id names, or None for a session no namespace names."""
        return namespace_of(session_id)

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return on_engine_sync(self.uni, self._run(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await on_engine(self.uni, self._run(list(ops)))

    async def _run(self, ops: list[Op]) -> list[Result]:
        for op in ops:
            check_op(op)
        self._check_puts(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:  # pragma: no cover - LangGraph has no other op
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    # ------------------------------------------------------------------ engine reads
    async def _namespaces(self) -> list[tuple[Namespace, str, str]]:
        """(namespace, session id, session node id) of every session a namespace names, oldest first."""
        out = []
        for node in await self._agent.sessions():
            if (ns := namespace_of(node.external_id)) is not None:
                out.append((ns, node.external_id, node.id))
        return out

    async def _messages(self, session: str, *, include_redacted: bool = False) -> list[Message]:
        return await self._agent.session(session).messages(include_redacted=include_redacted)

    async def _records(
        self, namespace: Namespace, messages: list[Message] | None = None
    ) -> dict[str, list[Message]]:
        """Key → live versions (oldest first) of the values stored under ``namespace``, keys in the
        order they were first put. Only values recorded with this very namespace count."""
        if messages is None:
            messages = await self._messages(session_of(namespace))
        records: dict[str, list[Message]] = {}
        for message in messages:
            ident = _ident(message)
            if ident is not None and ident[0] == namespace:
                records.setdefault(ident[1], []).append(message)
        ordered = sorted(records.items(), key=lambda kv: (_created(kv[1]), kv[1][0].seq))
        return dict(ordered)

    def _item(
        self, namespace: Namespace, versions: list[Message], cls: type[Item] = Item, **extra: Any
    ) -> Item:
        last = versions[-1]
        meta = last.metadata[_META]
        return cls(
            value=dict(meta["value"]),
            key=meta["key"],
            namespace=namespace,
            created_at=_created(versions),
            updated_at=last.timestamp,
            **extra,
        )

    def _text(self, value: Mapping[str, Any], key: str) -> str:
        for name in self.text_fields:
            text = value.get(name)
            if isinstance(text, str) and text.strip():
                return text
        return "; ".join(f"{k}: {v}" for k, v in value.items() if k != "sender") or key

    # ------------------------------------------------------------------ operations
    async def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        if not namespace:
            return None  # no value is stored under the empty namespace
        versions = (await self._records(namespace)).get(op.key)
        return self._item(namespace, versions) if versions else None

    async def _forget(self, session: str, message: Message) -> None:
        """Redact a stored version: its turn and what was derived only from it."""
        await self._agent.forget_turn(session, message.external_id)

    async def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        if not namespace:
            return  # a delete under the empty namespace: nothing is ever stored there
        session = session_of(namespace)
        base = turn_base(namespace, op.key)
        every = await self._messages(session, include_redacted=True)
        live = (await self._records(namespace, every)).get(op.key, [])
        if op.value is None:
            for message in live:
                await self._forget(session, message)
            return
        value = dict(op.value)
        if live and live[-1].metadata[_META]["value"] == value:
            older = live[:-1]  # same value again: nothing new (older versions: an interrupted update)
        else:
            # Redaction blanks the metadata, so earlier version numbers are counted by turn id.
            version = 1 + sum(1 for m in every if is_version(m.external_id, base))
            created = _created(live) if live else datetime.now(UTC)
            result = await self._agent.session(session).observe(self._turn(op, version, created))
            self._unsettled = True
            if result.was_replay:
                raise IdConflict(
                    f"the turn id for key {op.key!r} in namespace {namespace} is already taken by "
                    "another turn of this agent; the value was not stored"
                )
            older = live  # the new version is durable first, then the old ones are forgotten
        for message in older:
            await self._forget(session, message)

    def _turn(self, op: PutOp, version: int, created: datetime) -> Turn:
        """The turn that stores version ``version`` of a put's value."""
        assert op.value is not None
        value = dict(op.value)
        sender = value.get("sender") if isinstance(value.get("sender"), str) else self.sender
        base = turn_base(tuple(op.namespace), op.key)
        meta = {
            "namespace": list(op.namespace),
            "key": op.key,
            "value": value,
            "version": version,
            "created_at": created.isoformat(),
        }
        return Turn(
            sender=sender,
            content=self._text(value, op.key),
            at=datetime.now(UTC),
            id=base + (f"#{version}" if version > 1 else ""),
            metadata={_META: meta},
        )

    def _check_puts(self, ops: list[Op]) -> None:
        """Refuse, before anything is written, a batch the engine would refuse part-way through.

        A batch may put at most ``IngestConfig.max_unit_turns`` values, and each value must pass
        the engine's turn checks (``max_turn_chars``, ``max_metadata_bytes``: the value rides in
        the turn's metadata). The engine checks every turn again when it stores it.
        """
        limits = self._agent.config.ingest
        puts = [op for op in ops if isinstance(op, PutOp) and op.value is not None]
        if len(puts) > limits.max_unit_turns:
            raise ValidationError(
                f"the batch puts {len(puts):,} values, over the limit of {limits.max_unit_turns:,} "
                "(IngestConfig.max_unit_turns); split it into several batches"
            )
        for position, op in enumerate(puts):
            try:
                check_session_id(session_of(tuple(op.namespace)))
            except ValidationError as exc:
                raise ValidationError(
                    f"namespace {tuple(op.namespace)} names no valid session: {exc}"
                ) from None
            turn = self._turn(op, 1, datetime.now(UTC))
            turn.metadata[_META]["version"] = 2**31  # the widest version: the check never under-counts
            check_turn(turn, limits.max_turn_chars, position, max_metadata_bytes=limits.max_metadata_bytes)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        every = await self._namespaces()
        chosen = [entry for entry in every if entry[0][: len(prefix)] == prefix]
        values, total = await self._values(chosen, op.filter)
        if not op.query:
            listed = [self._search_item(ident, versions) for ident, versions in values.items()]
            return listed[op.offset : op.offset + op.limit]
        if not values and not (self.include_derived and (chosen or not prefix)):
            return []
        await self._settle()
        need = max(1, op.offset + op.limit)
        ranked = await self._ranked(op.query, prefix, chosen, every, values, op.filter, need, total)
        returned = {(tuple(item.namespace), item.key) for item in ranked}
        rest = [self._search_item(i, v, score=None) for i, v in values.items() if i not in returned]
        return [*ranked, *rest][op.offset : op.offset + op.limit]

    async def _values(
        self, chosen: list[tuple[Namespace, str, str]], flt: Mapping[str, Any] | None
    ) -> tuple[dict[tuple[Namespace, str], list[Message]], int]:
        """The current values under the prefix that match ``flt`` (and the viewer), in listing
        order, as (namespace, key) → live versions; and how many values lie under the prefix."""
        values: dict[tuple[Namespace, str], list[Message]] = {}
        total = 0
        for namespace, _, _ in chosen:
            for key, versions in (await self._records(namespace)).items():
                total += 1
                last = versions[-1]
                if self.viewer is not None and not self.viewer.admits(last.visibility):
                    continue
                if _matches(last.metadata[_META]["value"], flt):
                    values[(namespace, key)] = versions
        return values, total

    def _search_item(
        self, ident: tuple[Namespace, str], versions: list[Message], score: float | None = None
    ) -> SearchItem:
        item = self._item(ident[0], versions, SearchItem, score=score)
        assert isinstance(item, SearchItem)
        return item

    async def _settle(self) -> None:
        """Wait, at most ``search_wait`` seconds, for the background work of earlier puts."""
        if not self._unsettled or self.search_wait <= 0:
            return
        self._unsettled = False
        try:
            await self._agent.flush(timeout=self.search_wait)
        except TimeoutError:
            self._unsettled = True  # still pending: the next search waits again

    async def _ranked(
        self,
        query: str,
        prefix: Namespace,
        chosen: list[tuple[Namespace, str, str]],
        every: list[tuple[Namespace, str, str]],
        values: dict[tuple[Namespace, str], list[Message]],
        flt: Mapping[str, Any] | None,
        need: int,
        total: int,
    ) -> list[SearchItem]:
        """What recall ranks among ``values`` (and derived memories, when included), best first.

        Recall is asked for ``need`` items, more when the filter passes few of the values (the
        share it passes), and four times as many while too few of its items match, until
        ``RecallPacking.max_candidates``: a bounded number of recalls, each bounded by its budget.
        """
        if self.include_derived:
            sessions = [session for _, session, _ in chosen] if prefix else None
        else:
            held = {namespace for namespace, _ in values}
            sessions = [session for namespace, session, _ in chosen if namespace in held]
        cap = max(need, self._agent.config.recall.packing.max_candidates)
        limit = min(cap, -(-need * total // len(values)) if values else need)  # need / the share matching
        while True:
            options: dict[str, Any] = {**self.recall_options, "limit": limit}
            if sessions is not None:
                options["sessions"] = sessions
            if self.viewer is not None:
                options["viewer"] = self.viewer
            bundle = await self._agent.recall(query, **options)
            hits = await self._hits(bundle.items, prefix, every, values, flt)
            exhausted = len(bundle.items) < limit or limit >= cap
            if len(hits) >= need or exhausted or (not self.include_derived and len(hits) == len(values)):
                hits.sort(key=lambda item: item.score or 0.0, reverse=True)
                return hits
            limit = min(cap, limit * 4)

    async def _hits(
        self,
        items: list[RecallItem],
        prefix: Namespace,
        every: list[tuple[Namespace, str, str]],
        values: dict[tuple[Namespace, str], list[Message]],
        flt: Mapping[str, Any] | None,
    ) -> list[SearchItem]:
        """A recall's items as store items: a stored value that is one of ``values`` as itself
        (whether recall carried its Message or a statement drawn from that Message alone, which
        the bundle keeps instead), a derived memory under the prefix that matches ``flt`` when
        derived memories are included; anything else is left out."""
        origin = {i.node_id: i.node_id if i.kind == "message" else i.statement_source() for i in items}
        messages = await self._agent.get_nodes([m for m in origin.values() if m])
        by_node = {node_id: ns for ns, _, node_id in every}
        out: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for item in items:
            message = messages.get(origin[item.node_id] or "")
            ident = _ident(message) if isinstance(message, Message) else None
            if isinstance(message, Message) and ident is not None:
                versions = values.get(ident)
                if not versions or versions[-1].id != message.id or ident in seen:
                    continue  # outside the prefix or the filter, an overwritten version, a deleted key, a repeat
                seen.add(ident)
                out.append(self._search_item(ident, versions, score=item.score))
            elif (isinstance(message, Message) and _META in message.metadata) or not self.include_derived:
                continue  # a forgotten stored value, or a derived memory (not asked for)
            else:
                namespace_or_none = by_node.get(item.session_id or "")
                if namespace_or_none is None and prefix:
                    continue
                namespace = namespace_or_none or ()
                if namespace[: len(prefix)] == prefix:
                    derived = self._derived(namespace, item)
                    if _matches(derived.value, flt):
                        out.append(derived)
        return out

    def _derived(self, namespace: Namespace, item: RecallItem) -> SearchItem:
        ts = item.timestamp or datetime.now(UTC)
        return SearchItem(
            namespace=namespace,
            key=item.node_id,
            value={
                "content": item.content,
                "rendered": item.rendered,
                "kind": item.kind,
                "sources": [s.model_dump(exclude_none=True) for s in item.sources],
                "timestamp": item.timestamp.isoformat() if item.timestamp else None,
            },
            created_at=ts,
            updated_at=item.end_timestamp or ts,
            score=item.score,
        )

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[Namespace] = set()
        for namespace, _, _ in await self._namespaces():
            if all(ns_matches(namespace, c) for c in op.match_conditions or ()) and await self._records(
                namespace
            ):
                found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]
