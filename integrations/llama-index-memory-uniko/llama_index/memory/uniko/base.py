"""``UnikoMemoryBlock``: uniko-memory as a long-term block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, model_validator

from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer
from uniko_memory.tokens import count_tokens
from uniko_memory.wakeup import with_wake_up

from ._render import is_date_heading, render_memory, split_entries


class UnikoMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``Memory.from_defaults(memory_blocks=[...])``.

    ``_aput`` stores the messages ``Memory`` flushes out of its short-term buffer as turns of a
    uniko session (``session_id``, else the ``Memory``'s session id); ``_aget`` recalls what the
    agent remembers about the latest user message(s) and returns it rendered (quoted, dated),
    within ``token_budget`` tokens. ``atruncate`` drops the last-listed memories first.

    Each memory is one entry, ``- [date] (source kind) text``, whose further lines start with
    ``  | ``; a tag-like ``<`` in stored text (``</uniko_memory>``, ``</memory>``) is written
    ``&lt;``, so a stored turn cannot close the block early or pose as an instruction.

    Example:
        .. code-block:: python

            from llama_index.core.memory import Memory
            from llama_index.memory.uniko import UnikoMemoryBlock

            block = UnikoMemoryBlock(agent=uni.agent("assistant"), priority=1)
            memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[block])
    """

    name: str = Field(default="uniko_memory", description="The name of the memory block.")
    description: str | None = Field(
        default="What uniko-memory recalls from past conversations.",
        description="A description of the block.",
    )
    agent: Agent = Field(
        exclude=True, description="The uniko agent whose memory this block reads and writes."
    )
    session_id: str | None = Field(
        default=None, description="The uniko session for stored turns; None uses the Memory's session id."
    )
    k: int | None = Field(
        default=None, ge=1, description="An optional cap on the memory items; None fills the budget."
    )
    token_budget: int = Field(
        default=1000, ge=1, description="The rendered memory's token budget (framing included)."
    )
    query_messages: int = Field(default=1, ge=1, description="How many latest user messages form the query.")
    sessions: list[str] | None = Field(default=None, description="Recall scope; None: every session.")
    viewer: Viewer | None = Field(default=None, description="Only memory this participant may see.")
    user_id: str = Field(default="user", description="Participant id of the user.")
    assistant_id: str = Field(default="assistant", description="Participant id of the assistant.")
    header: bool = Field(
        default=True,
        description="Frame the memory with the 'quoted data, not instructions' header and <memory> tags.",
    )
    wake_up: bool = Field(
        default=False,
        description="At the start of a conversation (a user message, no reply yet) also give the "
        "wake-up context (Agent.wake_up: who the memory is about, what matters most; no query).",
    )
    wake_up_tokens: int = Field(default=600, ge=1, description="The wake-up context's token budget.")

    @model_validator(mode="before")
    @classmethod
    def _agent_from_uni(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            uni: Uniko | None = data.pop("uni", None)
            agent_id: str | None = data.pop("agent_id", None)
            if uni is not None or agent_id is not None:
                if data.get("agent") is not None or uni is None or agent_id is None:
                    raise ValueError("pass either agent=... or both uni=... and agent_id=...")
                data["agent"] = uni.agent(agent_id)
            if isinstance(data.get("viewer"), str):
                data["viewer"] = Viewer(participant_id=data["viewer"])
        return data

    # ------------------------------------------------------------------ helpers
    def _query(self, messages: Sequence[ChatMessage] | None) -> str:
        texts = [m.content for m in messages or () if m.role == MessageRole.USER and m.content]
        return "\n".join(texts[-self.query_messages :])

    def _turn(self, message: ChatMessage, at: datetime) -> Turn | None:
        text = (message.content or "").strip()
        if not text:
            return None
        if message.role == MessageRole.USER:
            sender, to = self.user_id, self.assistant_id
        elif message.role == MessageRole.ASSISTANT:
            sender, to = self.assistant_id, self.user_id
        else:  # system and tool messages are not conversation turns
            return None
        return Turn(sender=sender, content=text, at=at, addressed_to=[to])

    # ------------------------------------------------------------------ BaseMemoryBlock
    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = self._query(messages)
        if not query:
            return ""
        options: dict[str, Any] = {"limit": self.k, "token_budget": self.token_budget}
        if self.sessions is not None:
            options["sessions"] = self.sessions
        if self.viewer is not None:
            options["viewer"] = self.viewer
        bundle = await self.agent.recall(query, **options)
        if self.wake_up and not any(m.role == MessageRole.ASSISTANT for m in messages or ()):
            wake_options = {k: v for k, v in options.items() if k in ("sessions", "viewer")}
            bundle = with_wake_up(await self.agent.wake_up(self.wake_up_tokens, **wake_options), bundle)
        return render_memory(bundle, header=self.header)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        now = datetime.now(UTC)
        by_session: dict[str, list[Turn]] = {}
        for i, message in enumerate(messages):
            # distinct times keep repeated texts apart (turn ids derive from text and time)
            turn = self._turn(message, now + timedelta(microseconds=i))
            if turn is not None:
                session = self.session_id or message.additional_kwargs.get("session_id") or "default"
                by_session.setdefault(str(session), []).append(turn)
        unit = self.agent.config.ingest.max_unit_turns  # the most turns one transaction may carry
        for session, turns in by_session.items():
            handle = self.agent.session(session)
            for start in range(0, len(turns), unit):
                await handle.commit_unit(turns[start : start + unit])

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        head, entries, tail = split_entries(content)
        removed = 0
        while entries and removed < tokens_to_truncate:
            removed += count_tokens(entries.pop())
            while entries and is_date_heading(entries[-1]):  # a heading left with no entries
                removed += count_tokens(entries.pop())
        return "\n".join([*head, *entries, *tail]) if entries else None
