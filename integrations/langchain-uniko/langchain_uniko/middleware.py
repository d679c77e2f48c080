"""``UnikoMiddleware``: long-term memory for ``langchain.agents.create_agent``.

Before each model call the recall bundle for the latest user message is added to the system
message (the conversation state is not changed); after the agent finishes, the run's user and
assistant messages are stored as turns. Needs ``pip install "langchain-uniko[agents]"``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from typing_extensions import override

from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle, RecallConfig
from uniko_memory.wakeup import with_wake_up

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError('UnikoMiddleware needs langchain 1.x: pip install "langchain-uniko[agents]"') from None

from ._common import as_viewer, conversation_turns, limit_alias, on_engine, on_engine_sync, resolve_agent
from ._render import render_memory

__all__ = ["UnikoMiddleware"]


def _last_user_text(messages: Sequence[AnyMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text) or None
    return None


def _turn_id(message: BaseMessage, position: int) -> str:
    if message.id:
        return f"lc:{message.id}"
    digest = hashlib.sha1(
        f"{position}:{message.type}:{message.text}".encode(), usedforsecurity=False
    ).hexdigest()[:16]
    return f"lc:{digest}"


class UnikoMiddleware(AgentMiddleware):
    """Inject recalled memory before the model and record the conversation after the agent.

    Args:
        agent: the uniko ``Agent`` handle (or pass ``uni=`` and ``agent_id=``).
        session_id: the session turns are stored in; None uses the run's ``thread_id``
            (``config={"configurable": {"thread_id": ...}}``), else ``"default"``.
        limit: an optional cap on the memory items injected (None: fill ``token_budget``);
            ``k=`` is a deprecated alias that warns.
        token_budget: the injected memory's token budget (the rendered text, framing included).
        viewer: a participant id or ``Viewer`` limiting what may be recalled.
        recall_scope_to_session: recall from the current session only (default: all sessions).
        recall_config: a base ``RecallConfig``.
        recall_options: further ``RecallConfig`` overrides.
        user_id: the participant id of the user.
        assistant_id: the participant id of the assistant.
        inject: add recalled memory to the system message (False: record only).
        record: store the run's turns after the agent (False: inject only).
        header: frame the injected memory with the "quoted data, not instructions" header and
            ``<memory>`` tags (entries are quoted line by line either way).
        record_episode: also store each question/answer exchange as a query Episode (``True`` or
            a ``uniko_memory.query.QueryRecordOptions``), so the engine can learn from it.
        wake_up: at the start of a conversation (the first user message, no reply yet) also
            inject the wake-up context (``Agent.wake_up``: who the memory is about, and what
            matters most, chosen without a query) within ``wake_up_tokens`` tokens.

    Example:
        .. code-block:: python

            from langchain.agents import create_agent
            from langchain_uniko import UnikoMiddleware

            agent = create_agent(model, tools=[], middleware=[UnikoMiddleware(uni.agent("bot"))])
            agent.invoke({"messages": [{"role": "user", "content": "Where do I work?"}]},
                         config={"configurable": {"thread_id": "chat-1"}})

    Recorded turn ids derive from the LangChain message ids, so re-running over a checkpointed
    thread does not store a message twice. The sync hooks need a handle from
    ``Uniko.open_sync`` / ``in_memory_sync``; the async hooks work with either kind.
    """

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        uni: Uniko | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
        token_budget: int = 1500,
        viewer: Viewer | str | None = None,
        recall_scope_to_session: bool = False,
        recall_config: RecallConfig | None = None,
        recall_options: dict[str, Any] | None = None,
        user_id: str = "user",
        assistant_id: str = "assistant",
        inject: bool = True,
        record: bool = True,
        record_episode: bool | Any = False,
        header: bool = True,
        k: int | None = None,
        wake_up: bool = False,
        wake_up_tokens: int = 600,
    ) -> None:
        super().__init__()
        self.agent = resolve_agent(agent, uni, agent_id)
        self.session_id = session_id
        self.limit = limit_alias(limit, k, "UnikoMiddleware")
        self.token_budget = token_budget
        self.viewer = as_viewer(viewer)
        self.recall_scope_to_session = recall_scope_to_session
        self.recall_config = recall_config
        self.recall_options = dict(recall_options or {})
        self.user_id = user_id
        self.assistant_id = assistant_id
        self.inject = inject
        self.record = record
        self.record_episode = record_episode
        self.header = header
        self.wake_up = wake_up
        self.wake_up_tokens = wake_up_tokens
        #: The wake-up bundle injected at the start of the latest conversation (None: none yet).
        self.last_wake_up: ContextBundle | None = None
        #: The bundle injected by the latest model call (for inspection and tests).
        self.last_bundle: ContextBundle | None = None
        self._bundles: dict[str, ContextBundle] = {}  # question -> injected bundle, for Episodes

    # ------------------------------------------------------------------ helpers
    def _session(self) -> str:
        if self.session_id is not None:
            return self.session_id
        try:
            thread = get_config().get("configurable", {}).get("thread_id")
        except RuntimeError:  # outside a runnable context
            thread = None
        return str(thread) if thread is not None else "default"

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"limit": self.limit, "token_budget": self.token_budget}
        if self.viewer is not None:
            options["viewer"] = self.viewer
        if self.recall_scope_to_session:
            options["sessions"] = [self._session()]
        options.update(self.recall_options)
        return options

    def _starts(self, request: ModelRequest) -> bool:
        """The conversation's first model call: one user message and no reply yet."""
        if not self.wake_up:
            return False
        msgs = request.messages
        return sum(isinstance(m, HumanMessage) for m in msgs) == 1 and not any(
            isinstance(m, AIMessage) for m in msgs
        )

    def _wake_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.viewer is not None:
            options["viewer"] = self.viewer
        if self.recall_scope_to_session:
            options["sessions"] = [self._session()]
        return options

    def _with_memory(
        self, request: ModelRequest, query: str, bundle: ContextBundle, wake: ContextBundle | None = None
    ) -> ModelRequest:
        self.last_bundle = bundle
        if wake is not None:
            self.last_wake_up = wake
        if self.record_episode:
            self._bundles[query] = bundle
            while len(self._bundles) > 64:
                self._bundles.pop(next(iter(self._bundles)))
        shown = with_wake_up(wake, bundle)
        if not shown.items:
            return request
        memory = render_memory(shown, header=self.header)
        current = request.system_message
        if current is None:
            system = SystemMessage(content=memory)
        elif isinstance(current.content, str):
            system = SystemMessage(content=f"{current.content}\n\n{memory}" if current.content else memory)
        else:
            system = SystemMessage(content=[*current.content, {"type": "text", "text": memory}])
        return request.override(system_message=system)

    def _turns(self, messages: Sequence[AnyMessage]) -> list[Turn]:
        now = datetime.now(UTC)
        turns = []
        for position, message, text, sender, to in conversation_turns(
            messages, self.user_id, self.assistant_id
        ):
            turns.append(
                Turn(sender=sender, content=text, at=now, addressed_to=[to], id=_turn_id(message, position))
            )
        return turns

    async def _episode(self, messages: Sequence[AnyMessage]) -> None:
        """Store the run's question and final answer as a query Episode (engine loop)."""
        from uniko_memory.query import QueryRecordOptions, record_query_episode

        question = _last_user_text(messages)
        answer = next((str(m.text) for m in reversed(messages) if isinstance(m, AIMessage) and m.text), "")
        bundle = self._bundles.pop(question, None) if question else None
        if question is None or not answer or bundle is None:
            return
        options = self.record_episode if isinstance(self.record_episode, QueryRecordOptions) else None
        await record_query_episode(
            self.agent.uniko.kb,
            self.agent.agent_id,
            question,
            answer,
            bundle,
            options or QueryRecordOptions(),
        )

    # ------------------------------------------------------------------ hooks
    @override
    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        query = _last_user_text(request.messages) if self.inject else None
        if query is not None:
            bundle = self.agent.recall_sync(query, self.recall_config, **self._options())
            wake = (
                self.agent.wake_up_sync(self.wake_up_tokens, **self._wake_options())
                if self._starts(request)
                else None
            )
            request = self._with_memory(request, query, bundle, wake)
        return handler(request)

    @override
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        query = _last_user_text(request.messages) if self.inject else None
        if query is not None:
            bundle = await self.agent.recall(query, self.recall_config, **self._options())
            wake = (
                await self.agent.wake_up(self.wake_up_tokens, **self._wake_options())
                if self._starts(request)
                else None
            )
            request = self._with_memory(request, query, bundle, wake)
        return await handler(request)

    @override
    def after_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        if self.record:
            session = self.agent.session(self._session())
            for turn in self._turns(state["messages"]):
                session.observe_sync(turn)  # one unit per turn: replayed turns are no-ops
        if self.record_episode:
            on_engine_sync(self.agent.uniko, self._episode(state["messages"]))
        return None

    @override
    async def aafter_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        if self.record:
            session = self.agent.session(self._session())
            for turn in self._turns(state["messages"]):
                await session.observe(turn)
        if self.record_episode:
            await on_engine(self.agent.uniko, self._episode(state["messages"]))
        return None
