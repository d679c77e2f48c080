"""Helpers shared by the LangChain / LangGraph adapters: handles, recall options, metadata."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from uniko_memory.deprecation import renamed
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle, RecallItem

if TYPE_CHECKING:
    from uniko_memory.facade import Agent, Uniko

T = TypeVar("T")

#: Recall options a caller may set per call (besides ``limit``); anything else goes through
#: ``recall_options`` and is validated by uniko's ``RecallConfig``.
SCOPE_FIELDS = ("sessions", "participants", "since", "until", "categories", "viewer", "reference_ts")


def conversation_turns(
    messages: Sequence[Any], user_id: str, assistant_id: str
) -> Iterator[tuple[int, Any, str, str, str]]:
    """(position, message, text, sender, addressed to) of each human or AI message with words.

    System and tool messages are not conversation turns, and a tool-call-only AI message carries
    no words to remember.
    """
    from langchain_core.messages import AIMessage, HumanMessage

    for position, message in enumerate(messages):
        text = str(message.text).strip()
        if not text:
            continue
        if isinstance(message, HumanMessage):
            yield position, message, text, user_id, assistant_id
        elif isinstance(message, AIMessage):
            yield position, message, text, assistant_id, user_id


def limit_alias(limit: int | None, k: int | None, owner: str) -> int | None:
    """The item count from ``limit=`` or the deprecated ``k=`` (which warns).

    uniko names the item count ``limit`` everywhere: ``Agent.recall(limit=...)``, LangGraph's
    ``BaseStore.search(limit=...)`` and these adapters. ``k`` stays as an alias for code written
    against 0.1 and goes in 0.3.
    """
    return renamed(limit, k, old="k", new="limit", owner=owner)


def resolve_agent(agent: Agent | None, uni: Uniko | None, agent_id: str | None) -> Agent:
    """The ``Agent`` handle from either ``agent=`` or ``uni=`` + ``agent_id=``."""
    if agent is not None:
        if uni is not None or agent_id is not None:
            raise ValueError("pass either agent=... or uni=... with agent_id=..., not both")
        return agent
    if uni is None or agent_id is None:
        raise ValueError("pass agent=uni.agent('...') or both uni=... and agent_id=...")
    return uni.agent(agent_id)


def as_viewer(viewer: Viewer | str | None) -> Viewer | None:
    """A ``Viewer`` from a participant id string (or a ``Viewer``, or None)."""
    if viewer is None or isinstance(viewer, Viewer):
        return viewer
    return Viewer(participant_id=viewer)


def build_recall_options(
    *, limit: int | None, token_budget: int | None, scope: Mapping[str, Any], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """Keyword options for ``Agent.recall``: ``limit`` / ``token_budget`` plus scope and extras."""
    options: dict[str, Any] = {key: value for key, value in scope.items() if value is not None}
    options.update(extra)
    if "viewer" in options:
        options["viewer"] = as_viewer(options["viewer"])
    if limit is not None:
        options["limit"] = limit
    if token_budget is not None:
        options["token_budget"] = token_budget
    return options


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


def item_metadata(item: RecallItem, bundle: ContextBundle, rank: int) -> dict[str, Any]:
    """JSON-friendly metadata for one recalled item, with the bundle's coverage and phase flags."""
    return {
        "node_id": item.node_id,
        "kind": item.kind,
        "score": item.score,
        "rank": rank,
        "content": item.content,
        "timestamp": _iso(item.timestamp),
        "end_timestamp": _iso(item.end_timestamp),
        "session_id": item.session_id,
        "sources": [source.model_dump(exclude_none=True) for source in item.sources],
        "channels": list(item.channels),
        "category": item.category,
        "tokens": item.tokens,
        "coverage": bundle.coverage,
        "phase1_only": bundle.phase1_only,
        "phase2_only": bundle.phase2_only,
    }


def item_text(item: RecallItem, page_content: str) -> str:
    """The item's prompt text: ``rendered`` (with its date) or the bare ``content``."""
    if page_content == "content":
        return item.content
    return item.rendered or item.content


async def on_engine(uni: Uniko, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on the engine loop, forwarding from another loop when needed."""
    return await uni.run_async(coro)


def on_engine_sync(uni: Uniko, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the engine loop from synchronous code (uniko's ``*_sync`` rules apply)."""
    return uni.run_sync(coro)
