"""Chunk nodes for a parent (a long Message, an Artifact): one shape, one HAS_CHUNK edge each."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from ..model import Chunk, Edge, EdgeType, Node, Tier, chunk_id
from .chunking import TextChunk


class Writes(Protocol):
    """The part of a unit of work chunks need (a store unit, or ingest's prefetching wrapper)."""

    def put(self, node: Node) -> None: ...

    def put_edge(self, edge: Edge) -> None: ...


def put_chunks(
    u: Writes,
    *,
    agent: str,
    parent_id: str,
    parent_tier: Tier,
    chunk_type: str,
    chunks: Sequence[tuple[TextChunk, dict[str, Any]]],
    session_id: str | None,
    at: datetime,
    visibility: str,
    covered_ids: list[str] | None = None,
) -> list[str]:
    """Write ``chunks`` (each with its metadata) under ``parent_id``; returns the chunk ids in order."""
    ids = []
    for c, metadata in chunks:
        cid = chunk_id(agent, parent_id, chunk_type, c.index)
        ids.append(cid)
        u.put(
            Chunk(
                id=cid,
                agent=agent,
                parent_id=parent_id,
                parent_tier=parent_tier,
                chunk_type=chunk_type,
                index=c.index,
                text=c.text,
                start=c.start,
                end=c.end,
                token_count=c.token_count,
                heading=c.heading,
                session_id=session_id,
                start_time=at,
                end_time=at,
                covered_ids=list(covered_ids or []),
                metadata=metadata,
                visibility=visibility,
            )
        )
        u.put_edge(Edge(type=EdgeType.HAS_CHUNK, src=parent_id, dst=cid, props={"index": c.index}))
    return ids
