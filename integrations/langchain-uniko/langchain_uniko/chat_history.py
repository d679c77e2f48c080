"""``UnikoChatMessageHistory``: a LangChain ``BaseChatMessageHistory`` whose turns live in uniko.

What ``RunnableWithMessageHistory`` (and any code written against ``BaseChatMessageHistory``)
expects, with the conversation stored as turns of one uniko session, so it is also long-term
memory: recalled in other sessions, consolidated, forgettable. ``prime`` starts the history with
what uniko recalls for the conversation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from typing_extensions import override

from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Message, Viewer
from uniko_memory.recall import ContextBundle

from ._common import as_viewer, conversation_turns, limit_alias, on_engine, on_engine_sync, resolve_agent
from ._render import render_memory

__all__ = ["UnikoChatMessageHistory"]

#: The key of a stored turn's metadata that records the LangChain message it came from.
META_KEY = "langchain_message"


class UnikoChatMessageHistory(BaseChatMessageHistory):
    """The chat history of one conversation, stored as turns of a uniko session.

    ``add_messages`` stores each ``HumanMessage`` (as ``user_id``) and ``AIMessage`` (as
    ``assistant_id``) with words in it as a turn of ``session_id``, in one unit; system and tool
    messages, and AI messages that only call tools, are not conversation turns and are not stored.
    ``messages`` returns the stored turns, oldest first (the latest ``max_messages`` when set), as
    the message types they came in as, with their ids. ``clear`` forgets the session
    (``Agent.forget_session``: its turns and what was learnt only from them).

    ``prime`` starts ``messages`` with a ``SystemMessage`` holding uniko's recall (quoted, dated,
    within ``token_budget`` tokens): ``True`` recalls for the latest stored user message, a string
    recalls for that text (useful for a new session: ``"what do I know about this user?"``).
    Recall searches ``recall_sessions`` (None: every session of the agent) and only what
    ``viewer`` may see. ``recall_messages(query)`` gives the same message for any query, to put
    in a prompt next to the history.

    Example:
        .. code-block:: python

            from langchain_core.runnables.history import RunnableWithMessageHistory
            from langchain_uniko import UnikoChatMessageHistory

            agent = uni.agent("assistant")
            chain = RunnableWithMessageHistory(
                prompt | model,
                lambda session_id: UnikoChatMessageHistory(agent, session_id=session_id, prime=True),
                input_messages_key="question",
                history_messages_key="history",
            )
            chain.invoke({"question": "Where do I work?"}, config={"configurable": {"session_id": "c1"}})

    The sync methods need a handle from ``Uniko.open_sync`` / ``in_memory_sync``; the async ones
    (``aget_messages``, ``aadd_messages``, ``aclear``) work with either kind.
    """

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        uni: Uniko | None = None,
        agent_id: str | None = None,
        session_id: str,
        user_id: str = "user",
        assistant_id: str = "assistant",
        max_messages: int | None = None,
        prime: bool | str = False,
        limit: int | None = None,
        token_budget: int = 1000,
        recall_sessions: Sequence[str] | None = None,
        viewer: Viewer | str | None = None,
        header: bool = True,
        k: int | None = None,
    ) -> None:
        if max_messages is not None and max_messages < 1:
            raise ValueError("max_messages must be at least 1 (or None for the whole session)")
        self.agent = resolve_agent(agent, uni, agent_id)
        self.session = self.agent.session(session_id)  # a bad session id is refused here
        self.session_id = session_id
        self.user_id = user_id
        self.assistant_id = assistant_id
        self.max_messages = max_messages
        self.prime = prime
        self.limit = limit_alias(limit, k, "UnikoChatMessageHistory")
        self.token_budget = token_budget
        self.recall_sessions = list(recall_sessions) if recall_sessions is not None else None
        self.viewer = as_viewer(viewer)
        self.header = header

    # ------------------------------------------------------------------ conversions
    def _turns(self, messages: Sequence[BaseMessage]) -> list[Turn]:
        now = datetime.now(UTC)
        turns = []
        for position, message, text, sender, to in conversation_turns(
            messages, self.user_id, self.assistant_id
        ):
            meta = {"type": message.type, "id": message.id, "name": message.name}
            turns.append(
                Turn(
                    sender=sender,
                    content=text,
                    at=now + timedelta(microseconds=position),  # keeps repeated texts apart
                    addressed_to=[to],
                    id=_turn_id(message, now, position),
                    metadata={META_KEY: {k: v for k, v in meta.items() if v is not None}},
                )
            )
        return turns

    def _message(self, stored: Message) -> BaseMessage:
        meta = stored.metadata.get(META_KEY) or {}
        fields: dict[str, Any] = {"content": stored.content}
        if meta.get("id"):
            fields["id"] = meta["id"]
        if meta.get("name"):
            fields["name"] = meta["name"]
        kind = meta.get("type")
        if kind == "ai" or (kind is None and stored.sender_name == self.assistant_id):
            return AIMessage(**fields)
        return HumanMessage(**fields)

    def _window(self, stored: list[Message]) -> list[BaseMessage]:
        messages = [self._message(m) for m in stored]
        return messages[-self.max_messages :] if self.max_messages else messages

    def _prime_query(self, messages: Sequence[BaseMessage]) -> str | None:
        if isinstance(self.prime, str):
            return self.prime or None
        if self.prime:
            return next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        return None

    def _recall_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"limit": self.limit, "token_budget": self.token_budget}
        if self.recall_sessions is not None:
            options["sessions"] = self.recall_sessions
        if self.viewer is not None:
            options["viewer"] = self.viewer
        return options

    def _memory(self, bundle: ContextBundle) -> list[BaseMessage]:
        text = render_memory(bundle, header=self.header)
        return [SystemMessage(content=text)] if text else []

    # ------------------------------------------------------------------ recall
    async def arecall_messages(self, query: str) -> list[BaseMessage]:
        """``[SystemMessage(recalled memory)]`` for ``query`` (``[]`` when nothing is recalled)."""
        bundle = await self.agent.recall(query, **self._recall_options())
        return self._memory(bundle)

    def recall_messages(self, query: str) -> list[BaseMessage]:
        """The sync twin of ``arecall_messages``."""
        return self._memory(self.agent.recall_sync(query, **self._recall_options()))

    # ------------------------------------------------------------------ BaseChatMessageHistory
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The stored conversation, oldest first (after the primed memory, with ``prime``)."""
        history = self._window(self.session.messages_sync())
        query = self._prime_query(history)
        return [*self.recall_messages(query), *history] if query else history

    @override
    async def aget_messages(self) -> list[BaseMessage]:
        history = self._window(await on_engine(self.agent.uniko, self.session.messages()))
        query = self._prime_query(history)
        return [*await self.arecall_messages(query), *history] if query else history

    @override
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        turns = self._turns(messages)
        if turns:
            on_engine_sync(self.agent.uniko, self._commit(turns))

    @override
    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        turns = self._turns(messages)
        if turns:
            await on_engine(self.agent.uniko, self._commit(turns))

    async def _commit(self, turns: list[Turn]) -> None:
        unit = self.agent.config.ingest.max_unit_turns  # the most turns one transaction may carry
        for start in range(0, len(turns), unit):
            await self.session.commit_unit(turns[start : start + unit])

    @override
    def clear(self) -> None:
        self.agent.forget_session_sync(self.session_id)

    @override
    async def aclear(self) -> None:
        await on_engine(self.agent.uniko, self.agent.forget_session(self.session_id))


def _turn_id(message: BaseMessage, at: datetime, position: int) -> str:
    """``lc:<message id>`` (re-adding a message is a no-op), else one derived from time and text."""
    if message.id:
        return f"lc:{message.id}"
    digest = hashlib.sha1(
        f"{at.isoformat()}:{position}:{message.type}:{message.text}".encode(), usedforsecurity=False
    ).hexdigest()[:16]
    return f"lch:{digest}"
