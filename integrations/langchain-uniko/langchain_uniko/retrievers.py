"""``UnikoRetriever``: uniko-memory's recall cascade as a LangChain retriever."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator
from typing_extensions import override

from uniko_memory.facade import Agent, Uniko
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle, RecallConfig

from ._common import (
    SCOPE_FIELDS,
    build_recall_options,
    item_metadata,
    item_text,
    limit_alias,
    resolve_agent,
)

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )


class UnikoRetriever(BaseRetriever):
    """Retrieve memories of a uniko-memory agent: one ``Document`` per recalled item.

    ``page_content`` is the item's rendered text (with its date); ``metadata`` holds ``kind``,
    ``score``, ``rank``, ``sources``, ``timestamp`` / ``end_timestamp``, ``session_id``,
    ``node_id``, ``channels``, plus the bundle's ``coverage``, ``phase1_only`` and ``phase2_only``.

    Setup:
        ``pip install langchain-uniko`` (pulls ``uniko-memory`` and ``langchain-core``).

    Key init args:
        agent: a ``uniko_memory`` ``Agent`` handle (or ``uni=`` + ``agent_id=``).
        limit: the number of items to return (the name ``Agent.recall`` and LangGraph's store
            use; ``k=`` is a deprecated alias that warns).
        token_budget: the bundle's token budget (uniko default when None).
        sessions, participants, since, until, categories: scope filters.
        viewer: a participant id or ``Viewer``; only what it may see is returned.
        reference_ts: what relative dates in the query ("last May") are relative to.

    Instantiate:
        .. code-block:: python

            from uniko_memory.facade import Uniko
            from langchain_uniko import UnikoRetriever

            uni = Uniko.open_sync("./memory")
            retriever = UnikoRetriever(agent=uni.agent("assistant-1"), limit=5)

    Usage:
        .. code-block:: python

            docs = retriever.invoke("Where does Priya work?")
            docs = await retriever.ainvoke("Where does Priya work?", limit=2, sessions=["s1"])

    Every option can be overridden per call (``invoke(query, limit=..., sessions=..., ...)``);
    other ``RecallConfig`` fields go through ``recall_options`` or per-call keywords. The sync
    path uses ``Agent.recall_sync`` and needs a handle from ``Uniko.open_sync`` /
    ``in_memory_sync`` (or a call from outside the engine's loop); the async path awaits the
    async core directly, with no executor hop.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agent: Agent
    """The uniko agent whose memory is searched."""
    limit: int = Field(default=4, ge=1)
    """How many items to return (``k`` is a deprecated alias)."""
    token_budget: int | None = Field(default=None, ge=1)
    """The recall bundle's token budget; None keeps the engine's default."""
    sessions: list[str] | None = None
    participants: list[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    categories: list[str] | None = None
    viewer: Viewer | str | None = None
    reference_ts: datetime | None = None
    recall_config: RecallConfig | None = None
    """A base ``RecallConfig`` (e.g. ``RecallConfig.preset("fast")``); None = the engine's."""
    recall_options: dict[str, Any] = Field(default_factory=dict)
    """Further ``RecallConfig`` overrides applied on every call."""
    page_content: Literal["rendered", "content"] = "rendered"
    """``rendered`` (dated prompt text) or the bare ``content``."""

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
            limit = limit_alias(data.get("limit"), data.pop("k"), "UnikoRetriever")
            if limit is not None:
                data["limit"] = limit
        return data

    @property
    def k(self) -> int:
        """Deprecated: the item count is ``limit``."""
        limit_alias(None, self.limit, "UnikoRetriever.k")
        return self.limit

    def _options(self, limit: int | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        scope = {name: getattr(self, name) for name in SCOPE_FIELDS}
        extra = {**self.recall_options, **kwargs}
        for name in SCOPE_FIELDS:  # a per-call scope value replaces the field's
            if name in extra:
                scope[name] = extra.pop(name)
        # One Document per item, each with its own date: the budget is charged that way.
        extra.setdefault("layout", "standalone")
        return build_recall_options(
            limit=limit if limit is not None else self.limit,
            token_budget=extra.pop("token_budget", self.token_budget),
            scope=scope,
            extra=extra,
        )

    def _documents(self, bundle: ContextBundle, limit: int) -> list[Document]:
        return [
            Document(
                id=item.node_id,
                page_content=item_text(item, self.page_content),
                metadata=item_metadata(item, bundle, rank),
            )
            for rank, item in enumerate(bundle.items[:limit])
        ]

    @override
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        limit: int | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        options = self._options(limit_alias(limit, k, "UnikoRetriever.invoke"), kwargs)
        bundle = self.agent.recall_sync(query, self.recall_config, **options)
        return self._documents(bundle, options["limit"])

    @override
    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        limit: int | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        options = self._options(limit_alias(limit, k, "UnikoRetriever.invoke"), kwargs)
        bundle = await self.agent.recall(query, self.recall_config, **options)
        return self._documents(bundle, options["limit"])
