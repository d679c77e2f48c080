"""The Weaviate store's searches: ``near_vector``, ``bm25`` and ``hybrid`` (relative-score fusion),
their scores mapped to the store contract (``protocol``) and ties at the cut broken by id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...model import Tier, node_class
from ..filters import Filter
from ..fusion import relative_score
from ..protocol import Hit, hybrid_candidates
from ..text_query import clean_text, search_terms
from . import schema as sc
from .core import MAX_RESULTS, WeaviateCore, tenant_name
from .filter_map import Side

_WORD = re.compile(r"[^\W_]+")


def query_tokens(text: str) -> list[str]:
    """Weaviate WORD tokens of the query (letters/digits, lower-cased), stopwords dropped, OR-ed."""
    return search_terms(_WORD.findall(clean_text(text)))


def _pad(k: int) -> int:
    """Ask for a few more than k so ties at the cut are broken by id, as the contract says."""
    return min(MAX_RESULTS, k + min(k, 16))


def _ranked(hits: Iterable[Hit], k: int) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, h.id))[:k]


class WeaviateSearch(WeaviateCore):
    """``vector_search``, ``text_search`` and ``hybrid_search`` on Weaviate's own queries."""

    def _hits(self, tier: Tier, objs: Iterable[Any], score: Callable[[Any], float]) -> list[Hit]:
        cls = node_class(tier)
        return [Hit(cls.model_validate_json(o.properties["data"]), score(o)) for o in objs]

    async def _near(self, agent: str, tier: Tier, q: np.ndarray, limit: int, where: Side) -> list[Hit]:
        from weaviate.classes.query import MetadataQuery

        if where is False:
            return []
        col = self._col(self.collections[tier], tenant_name(agent))
        res = await self._read(
            lambda: col.query.near_vector(
                near_vector=q.astype(float).tolist(),
                target_vector=sc.VECTOR_NAME,
                limit=limit,
                filters=self._filters(where),
                return_metadata=MetadataQuery(distance=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        return self._hits(tier, objs, lambda o: min(1.0, max(0.0, 1.0 - float(o.metadata.distance))))

    async def _bm25(self, agent: str, tier: Tier, tokens: list[str], limit: int, where: Side) -> list[Hit]:
        from weaviate.classes.query import MetadataQuery

        if where is False or not tokens:
            return []
        col = self._col(self.collections[tier], tenant_name(agent))
        res = await self._read(
            lambda: col.query.bm25(
                query=" ".join(tokens),
                query_properties=["search_text"],
                limit=limit,
                filters=self._filters(where),
                return_metadata=MetadataQuery(score=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        return [h for h in self._hits(tier, objs, lambda o: float(o.metadata.score or 0.0)) if h.score > 0]

    async def _vector_search(
        self, agent: str, tier: Tier, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[Hit]:
        where = self._where(tier, flt)
        return _ranked(await self._near(agent, tier, query, _pad(k), where), k)

    async def _text_search(self, agent: str, tier: Tier, text: str, k: int, flt: Filter | None) -> list[Hit]:
        where = self._where(tier, flt)
        tokens = query_tokens(text)
        return _ranked(await self._bm25(agent, tier, tokens, _pad(k), where), k)

    async def _hybrid_search(
        self,
        agent: str,
        tier: Tier,
        text: str,
        query: np.ndarray | None,
        alpha: float,
        k: int,
        flt: Filter | None,
    ) -> list[Hit]:
        from weaviate.classes.query import HybridFusion, MetadataQuery

        where = self._where(tier, flt)
        tokens = query_tokens(text)
        q = query
        if where is False or (q is None and not tokens):
            return []
        if q is None or not tokens:
            # One leg only: fuse it alone, exactly as the embedded store does (top score 1.0).
            n = hybrid_candidates(k)
            legs: tuple[dict[str, Hit], dict[str, Hit]]
            if q is None:
                legs = ({}, {h.id: h for h in await self._bm25(agent, tier, tokens, n, where)})
            else:
                legs = ({h.id: h for h in await self._near(agent, tier, q, n, where)}, {})
            nodes = {**legs[0], **legs[1]}
            fused = relative_score(
                {i: h.score for i, h in legs[0].items()},
                {i: h.score for i, h in legs[1].items()},
                1.0 if q is not None else 0.0,
            )
            return [Hit(nodes[i].node, s) for i, s in fused[:k]]
        col = self._col(self.collections[tier], tenant_name(agent))
        res = await self._read(
            lambda: col.query.hybrid(
                query=" ".join(tokens),
                vector=q.astype(float).tolist(),
                alpha=float(alpha),
                fusion_type=HybridFusion.RELATIVE_SCORE,
                query_properties=["search_text"],
                target_vector=sc.VECTOR_NAME,
                limit=_pad(k),
                filters=self._filters(where),
                return_metadata=MetadataQuery(score=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        hits = self._hits(tier, objs, lambda o: min(1.0, max(0.0, float(o.metadata.score or 0.0))))
        return _ranked(hits, k)
