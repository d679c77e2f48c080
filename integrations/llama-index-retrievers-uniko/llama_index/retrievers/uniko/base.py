"""``UnikoRetriever``: uniko-memory's recall cascade as a LlamaIndex retriever."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from uniko_memory.deprecation import renamed
from uniko_memory.facade import Agent, Uniko
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle, RecallConfig, RecallItem

#: Items returned when ``similarity_top_k`` is not given.
DEFAULT_TOP_K = 4

#: Metadata kept out of the LLM prompt and the embedding text (the rendered text has the date).
_HIDDEN = [
    "node_id",
    "kind",
    "score",
    "rank",
    "timestamp",
    "end_timestamp",
    "session_id",
    "sources",
    "channels",
    "category",
    "tokens",
    "coverage",
    "phase1_only",
    "phase2_only",
]


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


def item_metadata(item: RecallItem, bundle: ContextBundle, rank: int) -> dict[str, Any]:
    """Metadata for one recalled item, with the bundle's coverage and phase flags."""
    return {
        "node_id": item.node_id,
        "kind": item.kind,
        "score": item.score,
        "rank": rank,
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


class UnikoRetriever(BaseRetriever):
    """Retrieve memories of a uniko-memory agent as ``NodeWithScore`` (``TextNode`` + metadata).

    The node text is the item's rendered text (dated), or its bare content with
    ``text="content"``; metadata holds ``kind``, ``score``, ``rank``, ``sources``, ``timestamp`` /
    ``end_timestamp``, ``session_id``, ``node_id``, ``channels`` and the bundle's ``coverage`` /
    ``phase1_only`` / ``phase2_only`` (hidden from the LLM prompt and from embeddings).

    Args:
        agent: a uniko ``Agent`` handle (or pass ``uni=`` and ``agent_id=``).
        similarity_top_k: how many items to return (LlamaIndex's name; recall's ``limit``).
            ``k=`` is a deprecated alias that warns.
        token_budget: the bundle's token budget (None: the engine default).
        sessions: recall from these sessions only.
        participants: recall what these participants said only.
        since: recall from this time on.
        until: recall from before this time.
        categories: recall these categories only.
        viewer: a participant id or ``Viewer``; only what it may see is returned.
        reference_ts: what relative dates in the query are relative to.
        recall_config: a base ``RecallConfig``.
        recall_options: further ``RecallConfig`` overrides.

    ``retrieve`` uses ``Agent.recall_sync`` (needs a handle from ``Uniko.open_sync`` /
    ``in_memory_sync`` or a call from outside the engine's loop); ``aretrieve`` awaits the async
    core directly.

    Example:
        .. code-block:: python

            from llama_index.retrievers.uniko import UnikoRetriever

            retriever = UnikoRetriever(uni.agent("assistant"), similarity_top_k=5)
            nodes = retriever.retrieve("Where does Priya work?")
    """

    def __init__(
        self,
        agent: Agent | None = None,
        *,
        uni: Uniko | None = None,
        agent_id: str | None = None,
        similarity_top_k: int | None = None,
        token_budget: int | None = None,
        sessions: Sequence[str] | None = None,
        participants: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        categories: Sequence[str] | None = None,
        viewer: Viewer | str | None = None,
        reference_ts: datetime | None = None,
        recall_config: RecallConfig | None = None,
        recall_options: dict[str, Any] | None = None,
        text: Literal["rendered", "content"] = "rendered",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        k: int | None = None,
    ) -> None:
        if agent is None:
            if uni is None or agent_id is None:
                raise ValueError("pass agent=uni.agent('...') or both uni=... and agent_id=...")
            agent = uni.agent(agent_id)
        elif uni is not None or agent_id is not None:
            raise ValueError("pass either agent=... or uni=... with agent_id=..., not both")
        top_k = renamed(similarity_top_k, k, old="k", new="similarity_top_k", owner="UnikoRetriever")
        top_k = DEFAULT_TOP_K if top_k is None else top_k
        if top_k < 1:
            raise ValueError("similarity_top_k must be at least 1")
        self.agent = agent
        self.similarity_top_k = top_k
        self.text = text
        self.recall_config = recall_config
        options: dict[str, Any] = {
            "sessions": list(sessions) if sessions is not None else None,
            "participants": list(participants) if participants is not None else None,
            "since": since,
            "until": until,
            "categories": list(categories) if categories is not None else None,
            "viewer": Viewer(participant_id=viewer) if isinstance(viewer, str) else viewer,
            "reference_ts": reference_ts,
            "token_budget": token_budget,
        }
        self.recall_options = {key: v for key, v in options.items() if v is not None}
        self.recall_options.update(recall_options or {})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def k(self) -> int:
        """Deprecated: the item count is ``similarity_top_k``."""
        renamed(None, self.similarity_top_k, old="k", new="similarity_top_k", owner="UnikoRetriever.k")
        return self.similarity_top_k

    def _options(self) -> dict[str, Any]:
        # One node per item, each with its own date: the budget is charged that way.
        return {"layout": "standalone", **self.recall_options, "limit": self.similarity_top_k}

    def _nodes(self, bundle: ContextBundle) -> list[NodeWithScore]:
        out = []
        for rank, item in enumerate(bundle.items[: self.similarity_top_k]):
            node = TextNode(
                id_=item.node_id,
                text=item.content if self.text == "content" else (item.rendered or item.content),
                metadata=item_metadata(item, bundle, rank),
                excluded_llm_metadata_keys=list(_HIDDEN),
                excluded_embed_metadata_keys=list(_HIDDEN),
            )
            out.append(NodeWithScore(node=node, score=item.score))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        bundle = self.agent.recall_sync(query_bundle.query_str, self.recall_config, **self._options())
        return self._nodes(bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        bundle = await self.agent.recall(query_bundle.query_str, self.recall_config, **self._options())
        return self._nodes(bundle)
