"""A long Message is quoted by its passages, never whole.

A turn over ``ChunkingConfig.message_chunk_threshold`` tokens is stored whole, with passages: its
``message`` Chunks (``HAS_CHUNK``), each embedded and searchable (the ``message_chunks`` channel).
When such a Message reaches the bundle's candidates (by BM25, the graph, time, its neighbours ...),
it is replaced by the passage of it closest to the question (cosine to the question's vector,
else word overlap), which takes the Message's channels and score; a passage already in the pool
keeps the better of the two scores. So a 200,000-character turn costs the bundle one passage of
at most ``ChunkingConfig.max_chunk_tokens`` tokens, and recall never renders or counts the whole.

Only Messages longer than ``RecallConfig.passage_min_chars`` are looked up (a turn with passages
has more tokens than the threshold, hence more characters): recalls without them make no store call.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..model import Chunk, EdgeType, Message

if TYPE_CHECKING:
    from .fusion import Candidate
    from .phases import Cascade

_WORD = re.compile(r"\w+")


async def quote_passages(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    """``ranked`` with every long Message that has passages replaced by its best passage."""
    limit = cas.cfg.passage_min_chars
    long = [c for c in ranked if isinstance(c.node, Message) and len(c.node.content) > limit]
    if not long:
        return ranked
    edges = await cas.store.neighbor_keys(cas.agent, [c.node.id for c in long], [EdgeType.HAS_CHUNK])
    by_message: dict[str, list[str]] = {}
    for src, _, dst in edges:
        by_message.setdefault(src, []).append(dst)
    if not by_message:
        return ranked
    ids = sorted({cid for cids in by_message.values() for cid in cids})
    nodes = await cas.store.get_many(cas.agent, ids)
    query = cas.intent.primary_vector
    vectors = await cas.store.get_vectors(cas.agent, ids) if query is not None else {}
    words = {w.lower() for w in cas.intent.keywords} or set(_WORD.findall(cas.intent.query.lower()))
    viewer = cas.cfg.viewer
    pool = {c.node.id: c for c in ranked}
    replaced: set[str] = set()
    for cand in long:
        passages = [
            n
            for cid in by_message.get(cand.node.id, [])
            if isinstance(n := nodes.get(cid), Chunk)
            and n.chunk_type == "message"
            and not n.redacted
            and (viewer is None or viewer.admits(n.visibility))
        ]
        if not passages:
            continue  # stored without passages (another threshold): the Message stays as it is

        def closeness(p: Chunk) -> tuple[float, int, int]:
            vec = vectors.get(p.id)
            cosine = float(np.dot(vec, query)) if vec is not None and query is not None else 0.0
            overlap = len(words & set(_WORD.findall(p.text.lower())))
            return (cosine, overlap, -p.index)

        best = max(passages, key=closeness)
        replaced.add(cand.node.id)
        held = pool.get(best.id)
        if held is not None:
            held.fused = max(held.fused, cand.fused)
            held.relevance = max(held.relevance, cand.relevance)
            for name, hit in cand.channels.items():
                held.channels.setdefault(name, hit)
            continue
        cand.node = best  # the passage takes the Message's place, channels and score
        pool[best.id] = cand
    if not replaced:
        return ranked
    out = [c for c in ranked if not (isinstance(c.node, Message) and c.node.id in replaced)]
    unique = list({id(c): c for c in out}.values())
    return sorted(unique, key=lambda c: (-c.fused, c.node.id))
