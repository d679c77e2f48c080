"""``UnikoMemoryBlock``: uniko-memory as a long-term block of LlamaIndex's ``Memory``.

``memory_from_defaults`` builds a ``Memory`` around the block whose short-term buffer hands
messages to uniko within a conversation (``Memory``'s own defaults flush only past 21,000 tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock, Memory
from pydantic import Field, model_validator

from uniko_memory.deprecation import renamed
from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer
from uniko_memory.tokens import count_tokens
from uniko_memory.wakeup import with_wake_up

from ._render import is_date_heading, render_block, split_entries

__all__ = ["FLUSH_TOKENS", "SHORT_TERM_TOKENS", "UnikoMemoryBlock", "memory_from_defaults"]

#: ``memory_from_defaults``: the short-term buffer (chat history kept verbatim), in tokens; past
#: it, the oldest messages go to uniko. A few exchanges, so long-term memory fills during a chat.
SHORT_TERM_TOKENS = 1200
#: ``memory_from_defaults``: how many tokens of the oldest messages one flush hands to uniko.
FLUSH_TOKENS = 300
#: ``memory_from_defaults``: ``Memory``'s overall limit (chat history plus every block).
TOKEN_LIMIT = 30000

Scope = Literal["auto", "session", "user", "agent"]


class UnikoMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``Memory.from_defaults(memory_blocks=[...])``.

    ``_aput`` stores the messages ``Memory`` flushes out of its short-term buffer as turns of a
    uniko session (``session_id``, else the ``Memory``'s session id); ``_aget`` recalls what the
    agent remembers about the latest user message(s) and returns it rendered (quoted, dated),
    within ``token_budget`` tokens. ``atruncate`` drops the last-listed memories first.

    Scope (``scope="auto"``): with ``user_id`` set, the chat's turns are stored private to that
    user (visibility ``private:<user_id>``) and recall serves only what that user may see (their
    own memories from every session, and public ones): one user's memories never reach another
    user's chat of the same agent. Without ``user_id``, recall stays inside the ``Memory``'s
    session. ``scope="agent"`` searches every session of the agent (a one-user agent);
    ``sessions=`` / ``viewer=`` set the scope explicitly.

    ``Memory`` wraps the text in ``<uniko_memory>`` (the block's ``name``): the block gives a
    header naming that tag and the entries, one ``- [date] (source kind) text`` each, whose
    further lines start with ``  | ``; a tag-like ``<`` in stored text (``</uniko_memory>``) is
    written ``&lt;``, so a stored turn cannot close the block early or pose as an instruction.

    Example:
        .. code-block:: python

            from llama_index.memory.uniko import memory_from_defaults

            memory = memory_from_defaults(uni.agent("assistant"), session_id="chat-1", user_id="alice")
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
    user_id: str | None = Field(
        default=None,
        description="The user this chat belongs to: their memories are private to them and recall "
        "serves only what they may see. None: the participant id 'user', recall within the session.",
    )
    assistant_id: str = Field(default="assistant", description="Participant id of the assistant.")
    scope: Scope = Field(
        default="auto",
        description="What recall searches: 'user' (what user_id may see, every session), 'session' "
        "(this chat's session), 'agent' (every session); 'auto' is 'user' with user_id, else 'session'.",
    )
    similarity_top_k: int | None = Field(
        default=None,
        ge=1,
        description="An optional cap on the memory items; None fills the budget (k: deprecated alias).",
    )
    token_budget: int = Field(
        default=1000, ge=1, description="The rendered memory's token budget (framing included)."
    )
    query_messages: int = Field(default=1, ge=1, description="How many latest user messages form the query.")
    sessions: list[str] | None = Field(
        default=None, description="Recall from these sessions (replaces the scope's session)."
    )
    viewer: Viewer | None = Field(
        default=None, description="Only memory this participant may see (replaces the scope's viewer)."
    )
    header: bool = Field(
        default=True,
        description="Start with the 'quoted data, not instructions' header naming the block's tag.",
    )
    wake_up: bool = Field(
        default=False,
        description="At the start of a conversation (a user message, no reply yet) also give the "
        "wake-up context (Agent.wake_up: who the memory is about, what matters most; no query).",
    )
    wake_up_tokens: int = Field(default=600, ge=1, description="The wake-up context's token budget.")
    profile: str | None = Field(
        default=None,
        description="A participant or entity whose current-state profile (Agent.profile: what is "
        "true now, grouped by attribute, dated and cited) leads the block, e.g. the user's id.",
    )
    profile_tokens: int = Field(default=400, ge=1, description="The profile's token budget.")

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
            if "k" in data:
                top_k = renamed(
                    data.get("similarity_top_k"),
                    data.pop("k"),
                    old="k",
                    new="similarity_top_k",
                    owner="UnikoMemoryBlock",
                )
                data["similarity_top_k"] = top_k
        return data

    @model_validator(mode="after")
    def _check_scope(self) -> UnikoMemoryBlock:
        if self.scope == "user" and not self.user_id:
            raise ValueError("scope='user' needs user_id=... (the user whose memories recall may serve)")
        return self

    @property
    def resolved_scope(self) -> Literal["session", "user", "agent"]:
        """The scope ``auto`` stands for: ``user`` with a ``user_id``, else ``session``."""
        if self.scope == "auto":
            return "user" if self.user_id else "session"
        return self.scope

    # ------------------------------------------------------------------ helpers
    def _query(self, messages: Sequence[ChatMessage] | None) -> str:
        texts = [m.content for m in messages or () if m.role == MessageRole.USER and m.content]
        return "\n".join(texts[-self.query_messages :])

    def _turn(self, message: ChatMessage, at: datetime) -> Turn | None:
        text = (message.content or "").strip()
        if not text:
            return None
        user = self.user_id or "user"
        if message.role == MessageRole.USER:
            sender, to = user, self.assistant_id
        elif message.role == MessageRole.ASSISTANT:
            sender, to = self.assistant_id, user
        else:  # system and tool messages are not conversation turns
            return None
        if self.resolved_scope == "user":
            return Turn(sender=sender, content=text, at=at, addressed_to=[to], visibility=f"private:{user}")
        return Turn(sender=sender, content=text, at=at, addressed_to=[to])

    def _recall_options(self, session_id: str | None) -> dict[str, Any]:
        """``Agent.recall`` options for the block's scope; ``session_id``: the Memory's."""
        options: dict[str, Any] = {"limit": self.similarity_top_k, "token_budget": self.token_budget}
        scope = self.resolved_scope
        if self.sessions is not None:
            options["sessions"] = self.sessions
        elif scope == "session":
            session = self.session_id or session_id
            if session is None:
                raise ValueError(
                    "UnikoMemoryBlock recalls within the chat's session: use it inside a Memory, pass "
                    "aget(..., session_id=...), or set user_id= / scope='agent' for a wider scope"
                )
            options["sessions"] = [session]
        if self.viewer is not None:
            options["viewer"] = self.viewer
        elif scope == "user":
            assert self.user_id is not None
            options["viewer"] = Viewer(participant_id=self.user_id)
        return options

    # ------------------------------------------------------------------ BaseMemoryBlock
    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = self._query(messages)
        if not query:
            return ""
        session = block_kwargs.get("session_id")
        options = self._recall_options(str(session) if session is not None else None)
        bundle = await self.agent.recall(query, **options)
        if self.wake_up and not any(m.role == MessageRole.ASSISTANT for m in messages or ()):
            wake_options = {k: v for k, v in options.items() if k in ("sessions", "viewer")}
            bundle = with_wake_up(await self.agent.wake_up(self.wake_up_tokens, **wake_options), bundle)
        if self.profile:
            viewer = options.get("viewer")
            profile = await self.agent.profile(
                self.profile, self.profile_tokens, **({"viewer": viewer} if viewer is not None else {})
            )
            bundle = with_wake_up(profile, bundle)
        return render_block(bundle, tag=self.name, header=self.header)

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
        head, entries = split_entries(content)
        removed = 0
        while entries and removed < tokens_to_truncate:
            removed += count_tokens(entries.pop())
            while entries and is_date_heading(entries[-1]):  # a heading left with no entries
                removed += count_tokens(entries.pop())
        return "\n".join([*head, *entries]) if entries else None


def memory_from_defaults(
    agent: Agent | None = None,
    *,
    uni: Uniko | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    short_term_tokens: int = SHORT_TERM_TOKENS,
    token_flush_size: int = FLUSH_TOKENS,
    token_limit: int = TOKEN_LIMIT,
    memory_blocks: Sequence[BaseMemoryBlock[Any]] = (),
    memory_options: Mapping[str, Any] | None = None,
    **block_options: Any,
) -> Memory:
    """A LlamaIndex ``Memory`` with a ``UnikoMemoryBlock`` that fills during the conversation.

    The chat history keeps the latest ``short_term_tokens`` tokens verbatim; past that, the
    oldest ``token_flush_size`` tokens of messages are stored in uniko (``Memory``'s own defaults
    wait for 21,000 tokens, so a typical chat never reaches long-term memory). ``session_id`` is
    the ``Memory``'s and the uniko session's; ``user_id`` scopes the block to that user (see
    ``UnikoMemoryBlock``); ``block_options`` go to the block (``similarity_top_k``,
    ``token_budget``, ``scope``, …), ``memory_options`` to ``Memory.from_defaults``
    (``tokenizer_fn``, ``insert_method``, ``chat_store``, …), ``memory_blocks`` are added after it.
    """
    if not 0 < short_term_tokens < token_limit:
        raise ValueError(f"short_term_tokens must be between 1 and token_limit ({token_limit:,})")
    if not 0 < token_flush_size <= short_term_tokens:
        raise ValueError("token_flush_size must be between 1 and short_term_tokens")
    if agent is None and uni is not None and agent_id is not None:
        agent = uni.agent(agent_id)
    elif agent is None or uni is not None or agent_id is not None:
        raise ValueError("pass either agent=... or both uni=... and agent_id=...")
    block = UnikoMemoryBlock(agent=agent, user_id=user_id, **block_options)
    return Memory.from_defaults(
        session_id=session_id,
        token_limit=token_limit,
        chat_history_token_ratio=short_term_tokens / token_limit,
        token_flush_size=token_flush_size,
        memory_blocks=[block, *memory_blocks],
        **dict(memory_options or {}),
    )
