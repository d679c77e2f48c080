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
* **search with ``query`` → recall** over the sessions under the prefix (all of the agent's
  memory, also conversations written by ``UnikoMiddleware`` or the facade, for the prefix
  ``()``): a stored value comes back as its current ``Item``; derived memories (observations,
  facts, chunks, ...) come back keyed by node id with
  ``{"content", "rendered", "kind", "sources", "timestamp"}`` under the namespace of their
  session (``()`` for agent-wide memories such as Facts, which only the prefix ``()`` reaches).
  ``score`` is recall's fused score (higher is better, not normalised). Without ``query``,
  search lists the stored values: namespace by namespace in the order they were first written,
  each in the order its keys were first put (as ``InMemoryStore`` does).
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

from collections.abc import Iterable, Mapping, Sequence
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
    """LangGraph filter semantics: equality, or ``{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}``."""
    for field, cond in (flt or {}).items():
        actual = value.get(field)
        if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
            for op, expected in cond.items():
                try:
                    ok = {
                        "$eq": lambda a, b: a == b,
                        "$ne": lambda a, b: a != b,
                        "$gt": lambda a, b: a is not None and a > b,
                        "$gte": lambda a, b: a is not None and a >= b,
                        "$lt": lambda a, b: a is not None and a < b,
                        "$lte": lambda a, b: a is not None and a <= b,
                    }[op](actual, expected)
                except KeyError:
                    raise ValueError(f"unsupported filter operator {op!r}") from None
                except TypeError:
                    ok = False
                if not ok:
                    return False
        elif isinstance(cond, Mapping):
            if not isinstance(actual, Mapping) or not _matches(actual, cond):
                return False
        elif actual != cond:
            return False
    return True


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
        self.recall_options = dict(recall_options or {})
        self._agent = uni.agent(agent_id)

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
        out: list[SearchItem] = []
        if op.query:
            if chosen or not prefix:
                out = await self._recall(op.query, prefix, chosen, every, want=op.offset + op.limit)
        else:
            for namespace, _, _ in chosen:
                for versions in (await self._records(namespace)).values():
                    item = self._item(namespace, versions, SearchItem)
                    assert isinstance(item, SearchItem)
                    out.append(item)
        if op.filter:
            out = [item for item in out if _matches(item.value, op.filter)]
        if op.query:
            out.sort(key=lambda item: item.score or 0.0, reverse=True)
        return out[op.offset : op.offset + op.limit]

    async def _recall(
        self,
        query: str,
        prefix: Namespace,
        chosen: list[tuple[Namespace, str, str]],
        every: list[tuple[Namespace, str, str]],
        *,
        want: int,
    ) -> list[SearchItem]:
        options: dict[str, Any] = {"limit": max(1, want), **self.recall_options}
        if prefix:
            options["sessions"] = [session for _, session, _ in chosen]
        if self.viewer is not None:
            options["viewer"] = self.viewer
        bundle = await self._agent.recall(query, **options)
        # A stored value comes back as itself, whether recall carried its Message or a statement
        # drawn from that Message alone (which the bundle keeps instead of the Message).
        origin = {i.node_id: i.node_id if i.kind == "message" else i.statement_source() for i in bundle.items}
        messages = await self._agent.get_nodes([m for m in origin.values() if m])
        by_node = {node_id: ns for ns, _, node_id in every}
        records: dict[Namespace, dict[str, list[Message]]] = {}
        out: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for item in bundle.items:
            message = messages.get(origin[item.node_id] or "")
            ident = _ident(message) if isinstance(message, Message) else None
            if isinstance(message, Message) and ident is not None:
                namespace, key = ident
                if namespace[: len(prefix)] != prefix or by_node.get(message.session_id) != namespace:
                    continue  # a value recorded in a session its namespace does not name (old flat keys)
                if namespace not in records:
                    records[namespace] = await self._records(namespace)
                current = records[namespace].get(key)
                if not current or current[-1].id != message.id or ident in seen:
                    continue  # an overwritten version, a deleted key, or the key already returned
                seen.add(ident)
                found = self._item(namespace, current, SearchItem, score=item.score)
                assert isinstance(found, SearchItem)
                out.append(found)
            elif isinstance(message, Message) and _META in message.metadata:
                continue  # a forgotten stored value
            else:
                namespace_or_none = by_node.get(item.session_id or "")
                if namespace_or_none is None and prefix:
                    continue
                namespace = namespace_or_none or ()
                if namespace[: len(prefix)] == prefix:
                    out.append(self._derived(namespace, item))
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
