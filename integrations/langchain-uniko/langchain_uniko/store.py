"""``UnikoStore``: a LangGraph ``BaseStore`` whose search is uniko-memory's recall.

Needs ``pip install "langchain-uniko[store]"`` (``langgraph.store.base`` lives in
``langgraph-checkpoint``).

Mapping:

* **namespace → agent + session.** With ``agent_id=`` fixed, the whole namespace names a
  session (``("memories", "u1")`` → session ``"memories/u1"``); without it the first element
  is the agent and the rest the session (``("u1", "memories")`` → agent ``u1``, session
  ``"memories"``). An empty remainder maps to ``default_session``.
* **put → ingest.** The value is stored as one turn (its text: the first of ``text_fields``
  present, else ``"k: v; ..."``), so it is extracted, embedded and recalled like any message;
  the value itself rides along in the message metadata, so ``get`` returns it unchanged.
  A put with a new value for an existing key adds a new version (memory is append-only; recall
  sees both, with their dates); ``get`` returns the latest. ``delete`` forgets every version (``Agent.forget_turn``).
* **search with ``query`` → recall** over the sessions under the prefix (all of the agent's
  memory for a bare agent prefix): items that are stored values come back as their
  ``Item``; derived memories (observations, facts, chunks, ...) come back keyed by node id with
  ``{"content", "rendered", "kind", "sources", "timestamp"}``. ``score`` is recall's fused score
  (higher is better, not normalised). Without ``query``, search lists the stored values.
* ``list_namespaces`` lists the namespaces of all sessions (also those written by
  ``UnikoMiddleware`` or the facade). TTLs are not supported.
* **limits.** A batch puts at most ``IngestConfig.max_unit_turns`` values, and each must pass
  the engine's turn limits (``max_turn_chars``, ``max_metadata_bytes``): a batch over a limit
  raises uniko's ``ValidationError`` before any of its operations runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.ingest.turn import check_turn
from uniko_memory.model import Message, Tier, Viewer
from uniko_memory.model import Session as SessionNode
from uniko_memory.recall import RecallItem
from uniko_memory.store.filters import Eq

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError('UnikoStore needs langgraph-checkpoint: pip install "langchain-uniko[store]"') from None

from ._common import as_viewer, on_engine, on_engine_sync

__all__ = ["UnikoStore"]

_META = "langgraph"
_SCAN = 100_000


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


def _ns_matches(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


class UnikoStore(BaseStore):
    """Long-term LangGraph memory on uniko-memory (``create_agent(..., store=UnikoStore(uni))``).

    Args:
        uni: the ``Uniko`` engine (``Uniko.open_sync(path)`` for sync graphs).
        agent_id: fix the agent; None takes it from the namespace's first element.
        default_session: the session of a namespace with nothing left after the agent.
        sender: who "says" a stored value when it has no ``"sender"`` field.
        text_fields: value fields holding the text to remember, in order of preference.
        viewer: a participant id or ``Viewer`` applied to every search.
        recall_options: extra ``RecallConfig`` overrides for searches (e.g. ``token_budget``).
    """

    def __init__(
        self,
        uni: Uniko,
        *,
        agent_id: str | None = None,
        default_session: str = "default",
        sender: str = "user",
        text_fields: Sequence[str] = ("content", "text", "memory", "data"),
        viewer: Viewer | str | None = None,
        recall_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.uni = uni
        self.agent_id = agent_id
        self.default_session = default_session
        self.sender = sender
        self.text_fields = tuple(text_fields)
        self.viewer = as_viewer(viewer)
        self.recall_options = dict(recall_options or {})

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return on_engine_sync(self.uni, self._run(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await on_engine(self.uni, self._run(list(ops)))

    async def _run(self, ops: list[Op]) -> list[Result]:
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

    # ------------------------------------------------------------------ mapping
    def _split(self, namespace: tuple[str, ...]) -> tuple[str, str]:
        """(agent, session) of a full namespace."""
        if self.agent_id is not None:
            rest = namespace
            agent = self.agent_id
        else:
            if not namespace:
                raise ValueError(
                    "UnikoStore without agent_id needs the agent as the namespace's first element"
                )
            agent, rest = namespace[0], namespace[1:]
        return agent, "/".join(rest) if rest else self.default_session

    def _namespace(self, agent: str, session: str) -> tuple[str, ...]:
        rest = tuple(session.split("/"))
        return rest if self.agent_id is not None else (agent, *rest)

    def _text(self, value: Mapping[str, Any]) -> str:
        for name in self.text_fields:
            text = value.get(name)
            if isinstance(text, str) and text.strip():
                return text
        return "; ".join(f"{k}: {v}" for k, v in value.items() if k != "sender")

    # ------------------------------------------------------------------ engine reads
    async def _agents(self) -> list[str]:
        return [self.agent_id] if self.agent_id is not None else list(await self.uni.kb.store.agents())

    async def _sessions(self, agent: str) -> dict[str, str]:
        """Session node id → external id, for one agent."""
        nodes = await self.uni.kb.store.find(agent, Tier.SESSION, limit=_SCAN)
        return {n.id: n.external_id for n in nodes if isinstance(n, SessionNode)}

    async def _messages(self, agent: str, session: str, *, include_redacted: bool = False) -> list[Message]:
        sid = self.uni.agent(agent).session(session).node_id
        found = await self.uni.kb.store.find(
            agent,
            Tier.MESSAGE,
            Eq("session", sid),
            limit=_SCAN,
            order_by="seq",
            include_redacted=include_redacted,
        )
        return [m for m in found if isinstance(m, Message)]

    async def _versions(self, agent: str, session: str) -> list[Message]:
        """Stored values of a session, oldest first (every live version of every key)."""
        return [m for m in await self._messages(agent, session) if _META in m.metadata]

    def _item(self, versions: list[Message], cls: type[Item] = Item, **extra: Any) -> Item:
        first, last = versions[0], versions[-1]
        meta = last.metadata[_META]
        return cls(
            value=dict(meta["value"]),
            key=meta["key"],
            namespace=tuple(meta["namespace"]),
            created_at=first.timestamp,
            updated_at=last.timestamp,
            **extra,
        )

    async def _records(self, agent: str, session: str) -> dict[str, list[Message]]:
        records: dict[str, list[Message]] = {}
        for message in await self._versions(agent, session):
            records.setdefault(message.metadata[_META]["key"], []).append(message)
        return records

    # ------------------------------------------------------------------ operations
    async def _get(self, op: GetOp) -> Item | None:
        agent, session = self._split(op.namespace)
        versions = (await self._records(agent, session)).get(op.key)
        return self._item(versions) if versions else None

    async def _put(self, op: PutOp) -> None:
        agent, session = self._split(op.namespace)
        base = f"lg:{'/'.join(op.namespace)}:{op.key}"
        every = [  # redaction blanks the metadata, so versions are matched by turn id
            m
            for m in await self._messages(agent, session, include_redacted=True)
            if m.external_id == base or m.external_id.startswith(base + "#")
        ]
        live = [m for m in every if not m.redacted]
        if op.value is None:
            handle = self.uni.agent(agent)
            for message in live:  # redacts the turn and what was derived only from it
                if hasattr(handle, "forget_turn"):
                    await handle.forget_turn(session, message.external_id)
                else:  # older engines: redact the stored value only
                    await self.uni.kb.store.redact(agent, [message.id])
            return
        if live and live[-1].metadata[_META]["value"] == dict(op.value):
            return  # same value again: nothing new to remember
        await self.uni.agent(agent).session(session).observe(self._turn(op, len(every) + 1))

    def _turn(self, op: PutOp, version: int) -> Turn:
        """The turn that stores version ``version`` of a put's value."""
        assert op.value is not None
        value = dict(op.value)
        sender = value.get("sender") if isinstance(value.get("sender"), str) else self.sender
        base = f"lg:{'/'.join(op.namespace)}:{op.key}"
        return Turn(
            sender=sender,
            content=self._text(value),
            at=datetime.now(UTC),
            id=base + (f"#{version}" if version > 1 else ""),
            metadata={
                _META: {"namespace": list(op.namespace), "key": op.key, "value": value, "version": version}
            },
        )

    def _check_puts(self, ops: list[Op]) -> None:
        """Refuse, before anything is written, a batch the engine would refuse part-way through.

        A batch may put at most ``IngestConfig.max_unit_turns`` values, and each value must pass
        the engine's turn checks (``max_turn_chars``, ``max_metadata_bytes``: the value rides in
        the turn's metadata). The engine checks every turn again when it stores it.
        """
        limits = self.uni.config.ingest
        puts = [op for op in ops if isinstance(op, PutOp) and op.value is not None]
        if len(puts) > limits.max_unit_turns:
            raise ValidationError(
                f"the batch puts {len(puts):,} values, over the limit of {limits.max_unit_turns:,} "
                "(IngestConfig.max_unit_turns); split it into several batches"
            )
        for position, op in enumerate(puts):
            turn = self._turn(op, 1)
            turn.metadata[_META]["version"] = 2**31  # the widest version: the check never under-counts
            check_turn(turn, limits.max_turn_chars, position, max_metadata_bytes=limits.max_metadata_bytes)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if self.agent_id is None and prefix:
            agents, rest = [prefix[0]], prefix[1:]
        else:
            agents, rest = await self._agents(), prefix
        out: list[SearchItem] = []
        for agent in agents:
            sessions = await self._sessions(agent)
            chosen = {sid: ext for sid, ext in sessions.items() if tuple(ext.split("/"))[: len(rest)] == rest}
            if not chosen:
                continue
            if op.query:
                out += await self._recall(
                    agent, op.query, chosen, scoped=bool(rest), want=op.offset + op.limit
                )
            else:
                for ext in chosen.values():
                    for versions in (await self._records(agent, ext)).values():
                        item = self._item(versions, SearchItem)
                        assert isinstance(item, SearchItem)
                        out.append(item)
        if op.filter:
            out = [item for item in out if _matches(item.value, op.filter)]
        if op.query:
            out.sort(key=lambda item: item.score or 0.0, reverse=True)
        return out[op.offset : op.offset + op.limit]

    async def _recall(
        self, agent: str, query: str, sessions: dict[str, str], *, scoped: bool, want: int
    ) -> list[SearchItem]:
        options: dict[str, Any] = {"limit": max(1, want), **self.recall_options}
        if scoped:
            options["sessions"] = sorted(set(sessions.values()))
        if self.viewer is not None:
            options["viewer"] = self.viewer
        handle: Agent = self.uni.agent(agent)
        bundle = await handle.recall(query, **options)
        # A stored value comes back as itself, whether recall carried its Message or a statement
        # drawn from that Message alone (which the bundle keeps instead of the Message).
        origin = {i.node_id: i.node_id if i.kind == "message" else i.statement_source() for i in bundle.items}
        messages = await self.uni.kb.store.get_many(agent, [m for m in origin.values() if m])
        out: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for item in bundle.items:
            message = messages.get(origin[item.node_id] or "")
            if isinstance(message, Message) and _META in message.metadata:
                meta = message.metadata[_META]
                ident = (tuple(meta["namespace"]), meta["key"])
                if ident in seen:
                    continue
                seen.add(ident)
                out.append(
                    SearchItem(
                        namespace=ident[0],
                        key=meta["key"],
                        value=dict(meta["value"]),
                        created_at=message.timestamp,
                        updated_at=message.timestamp,
                        score=item.score,
                    )
                )
            else:
                out.append(self._derived(agent, item, sessions))
        return out

    def _derived(self, agent: str, item: RecallItem, sessions: dict[str, str]) -> SearchItem:
        session = sessions.get(item.session_id or "", self.default_session)
        ts = item.timestamp or datetime.now(UTC)
        return SearchItem(
            namespace=self._namespace(agent, session),
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
        found: set[tuple[str, ...]] = set()
        for agent in await self._agents():
            for ext in (await self._sessions(agent)).values():
                ns = self._namespace(agent, ext)
                if all(_ns_matches(ns, c) for c in op.match_conditions or ()):
                    found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]
