"""``UnikoMemory``: a legacy ``BaseMemory`` (langchain-classic chains) over uniko-memory.

Legacy: ``BaseMemory`` is deprecated upstream (removal in LangChain 2.0); new code should use
``UnikoMiddleware`` with ``create_agent``. Needs ``pip install "langchain-uniko[legacy]"``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import SystemMessage
from pydantic import ConfigDict, Field, PrivateAttr, model_validator
from typing_extensions import override

from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle
from uniko_memory.wakeup import with_wake_up

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError('UnikoMemory needs langchain-classic: pip install "langchain-uniko[legacy]"') from None

from ._common import as_viewer, limit_alias, resolve_agent
from ._render import render_memory


class UnikoMemory(BaseMemory):
    """Long-term memory for a legacy chain: recall on load, ingest on save.

    ``load_memory_variables`` recalls what the agent remembers about the new input and renders
    it (quoted, with dates) within ``token_budget`` tokens under ``memory_key``;
    ``save_context`` stores the user input and the chain's output as two turns of ``session_id``;
    ``clear`` forgets that session (``Agent.forget_session``).

    Example:
        .. code-block:: python

            from langchain_classic.chains import ConversationChain
            from langchain_uniko import UnikoMemory

            memory = UnikoMemory(agent=uni.agent("assistant"), session_id="chat-1")
            chain = ConversationChain(llm=llm, memory=memory)
            chain.invoke({"input": "I adopted a cat called Biscuit."})
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: Agent
    session_id: str = "default"
    """The session the chain's turns are stored in."""
    memory_key: str = "history"
    input_key: str | None = None
    """The chain input holding the user's message (inferred when there is only one)."""
    output_key: str | None = None
    """The chain output holding the reply (inferred when there is only one)."""
    user_id: str = "user"
    assistant_id: str = "assistant"
    limit: int | None = Field(default=None, ge=1)
    """An optional cap on the memory items; None fills ``token_budget`` (``k``: deprecated alias)."""
    token_budget: int = Field(default=1000, ge=1)
    """The rendered memory's budget, header and tags included."""
    sessions: list[str] | None = None
    """Recall scope; None searches every session of the agent (long-term memory)."""
    viewer: Viewer | str | None = None
    return_messages: bool = False
    """Return ``[SystemMessage(memory)]`` instead of a string (for chat prompts)."""
    header: bool = True
    """Frame the memory with the "quoted data, not instructions" header and ``<memory>`` tags
    (entries are quoted line by line either way; see ``docs/security.md``)."""
    wake_up: bool = False
    """At the start of a conversation (this memory's first load) also give the wake-up context
    (``Agent.wake_up``: who the memory is about and what matters most, chosen without a query)."""
    wake_up_tokens: int = Field(default=600, ge=1)
    profile: str | None = None
    """A participant or entity whose current-state profile (``Agent.profile``: what is true now,
    grouped by attribute, dated and cited) leads the memory on every load, e.g. the user's id."""
    profile_tokens: int = Field(default=400, ge=1)
    _woken: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _agent_from_uni(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("uni" in data or "agent_id" in data):
            data = dict(data)
            uni: Uniko | None = data.pop("uni", None)
            agent_id: str | None = data.pop("agent_id", None)
            data["agent"] = resolve_agent(data.get("agent"), uni, agent_id)
        if isinstance(data, dict) and "k" in data:
            data = dict(data)
            data["limit"] = limit_alias(data.get("limit"), data.pop("k"), "UnikoMemory")
        return data

    @property
    @override
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    # ------------------------------------------------------------------ helpers
    def _input(self, inputs: dict[str, Any]) -> str:
        if self.input_key is not None:
            return str(inputs[self.input_key])
        keys = [k for k in inputs if k not in (self.memory_key, "stop")]
        if len(keys) != 1:
            raise ValueError(f"UnikoMemory needs input_key= when the chain has several inputs: {keys}")
        return str(inputs[keys[0]])

    def _output(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            return str(outputs[self.output_key])
        if len(outputs) != 1:
            raise ValueError(
                f"UnikoMemory needs output_key= when the chain has several outputs: {list(outputs)}"
            )
        return str(next(iter(outputs.values())))

    def _recall_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"limit": self.limit, "token_budget": self.token_budget}
        if self.sessions is not None:
            options["sessions"] = self.sessions
        if self.viewer is not None:
            options["viewer"] = as_viewer(self.viewer)
        return options

    def _wake_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.sessions is not None:
            options["sessions"] = self.sessions
        if self.viewer is not None:
            options["viewer"] = as_viewer(self.viewer)
        return options

    def _starts(self) -> bool:
        """True once: the first load of this memory, when the wake-up is on."""
        if not self.wake_up or self._woken:
            return False
        self._woken = True
        return True

    def _profile_options(self) -> dict[str, Any]:
        return {"viewer": as_viewer(self.viewer)} if self.viewer is not None else {}

    def _variables(
        self, bundle: ContextBundle, wake: ContextBundle | None = None, profile: ContextBundle | None = None
    ) -> dict[str, Any]:
        text = render_memory(with_wake_up(profile, with_wake_up(wake, bundle)), header=self.header)
        if self.return_messages:
            return {self.memory_key: [SystemMessage(content=text)] if text else []}
        return {self.memory_key: text}

    def _turns(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Turn]:
        now = datetime.now(UTC)
        return [
            Turn(sender=self.user_id, content=self._input(inputs), at=now, addressed_to=[self.assistant_id]),
            Turn(
                sender=self.assistant_id,
                content=self._output(outputs),
                at=now + timedelta(microseconds=1),  # keeps an echoed reply's derived id distinct
                addressed_to=[self.user_id],
            ),
        ]

    # ------------------------------------------------------------------ BaseMemory
    @override
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        bundle = self.agent.recall_sync(self._input(inputs), **self._recall_options())
        wake = (
            self.agent.wake_up_sync(self.wake_up_tokens, **self._wake_options()) if self._starts() else None
        )
        profile = (
            self.agent.profile_sync(self.profile, self.profile_tokens, **self._profile_options())
            if self.profile
            else None
        )
        return self._variables(bundle, wake, profile)

    @override
    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        bundle = await self.agent.recall(self._input(inputs), **self._recall_options())
        wake = (
            await self.agent.wake_up(self.wake_up_tokens, **self._wake_options()) if self._starts() else None
        )
        profile = (
            await self.agent.profile(self.profile, self.profile_tokens, **self._profile_options())
            if self.profile
            else None
        )
        return self._variables(bundle, wake, profile)

    @override
    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        self.agent.session(self.session_id).commit_unit_sync(self._turns(inputs, outputs))

    @override
    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        await self.agent.session(self.session_id).commit_unit(self._turns(inputs, outputs))

    @property
    def supports_clear(self) -> bool:
        """Whether ``clear`` can forget the session: always (``Agent.forget_session``)."""
        return True

    @override
    def clear(self) -> None:
        self.agent.forget_session_sync(self.session_id)

    @override
    async def aclear(self) -> None:
        await self.agent.forget_session(self.session_id)
