"""Session finalisation: transcript chunks, observation chunks and an extractive summary.

Transcript chunks (``"speaker: text"`` lines, up to 256 tokens, cut between turns) are the main
Phase-3 retrieval surface; each records exactly the Messages it contains (``covered_ids``), so
provenance is never stretched. Rebuilding is incremental and idempotent: chunks whose text did
not change are kept, changed ones rewritten, stale ones deleted; an unchanged session is a no-op.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from pydantic import BaseModel

from ..config import UnikoConfig
from ..model import Chunk, Edge, EdgeType, Message, Observation, Session, Summary, Tier, chunk_id, make_id
from ..model.time import UtcDatetime, utcnow
from ..store.filters import Eq
from ..store.protocol import Store, UnitOfWork
from ..tokens import count_tokens
from .chunking import chunk_text

MAX_SESSION_NODES = 1_000_000
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_SUMMARY_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "so",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "me",
        "him",
        "them",
        "just",
        "really",
        "very",
        "too",
        "also",
        "yeah",
        "oh",
        "ok",
        "okay",
    ]
)


class FinalizeReport(BaseModel):
    transcript_chunks: int
    observation_chunks: int
    rebuilt: bool
    ended_at: UtcDatetime | None = None
    summary_id: str | None = None


@dataclass
class _Piece:
    text: str
    covered: list[str]
    start_time: datetime | None
    end_time: datetime | None
    sources: list[str]
    visibility: str = "public"


#: (node id, line text, time, source message ids, visibility)
Line = tuple[str, str, datetime, list[str], str]


def _group_lines(lines: Sequence[Line], max_tokens: int, min_tokens: int, overlap: int) -> list[_Piece]:
    """Pack lines into pieces of at most ``max_tokens``, cutting between lines.

    A piece never mixes visibilities: a change of visibility starts a new piece, which takes that
    visibility, so a chunk can never show a private turn to someone the turn does not admit.
    """
    pieces: list[_Piece] = []
    cur: list[Line] = []
    tokens = 0

    def flush() -> None:
        if cur:
            pieces.append(
                _Piece(
                    "\n".join(x[1] for x in cur),
                    list(dict.fromkeys(x[0] for x in cur)),
                    cur[0][2],
                    cur[-1][2],
                    list(dict.fromkeys(s for x in cur for s in x[3])),
                    cur[0][4],
                )
            )

    for line in lines:
        t = count_tokens(line[1])
        if t > max_tokens:  # one very long turn: its own pieces, split at sentences
            flush()
            cur, tokens = [], 0
            for c in chunk_text(line[1], max_tokens=max_tokens, min_tokens=min_tokens, overlap=overlap):
                pieces.append(_Piece(c.text, [line[0]], line[2], line[2], list(line[3]), line[4]))
            continue
        if cur and (tokens + t > max_tokens or cur[-1][4] != line[4]):
            flush()
            cur, tokens = [], 0
        cur.append(line)
        tokens += t
    flush()
    return pieces


def extractive_summary(messages: Sequence[Message], max_sentences: int = 4) -> str:
    """The session's most content-bearing sentences (by shared keywords), in their original order."""
    sentences: list[tuple[int, str, str]] = []
    for i, m in enumerate(messages):
        for s in re.split(r"(?<=[.!?])\s+", m.content.strip()):
            if len(s.split()) >= 4:
                sentences.append((i, m.sender_name, s))
    if not sentences:
        return ""
    freq = Counter(
        w.lower() for _, _, s in sentences for w in _WORD.findall(s) if w.lower() not in _SUMMARY_STOP
    )

    def score(s: str) -> float:
        words = [w.lower() for w in _WORD.findall(s) if w.lower() not in _SUMMARY_STOP]
        return sum(freq[w] for w in set(words)) / (1 + len(words)) ** 0.5

    ranked = sorted(range(len(sentences)), key=lambda j: (-score(sentences[j][2]), j))[:max_sentences]
    return " ".join(f"{sentences[j][1]}: {sentences[j][2]}" for j in sorted(ranked))


class SessionFinalizer:
    def __init__(self, store: Store, config: UnikoConfig, embedder: object = None) -> None:
        self.store = store
        self.config = config
        self.embedder = embedder

    async def finalize(self, agent: str, session_node_id: str, *, close: bool = False) -> FinalizeReport:
        session = await self.store.get(agent, session_node_id)
        if not isinstance(session, Session):
            from ..errors import NotFound

            raise NotFound(f"no session {session_node_id!r} for agent {agent!r}")
        sfilter = Eq("session", session_node_id)
        messages = [
            m
            for m in await self.store.find(
                agent, Tier.MESSAGE, sfilter, limit=MAX_SESSION_NODES, order_by="seq"
            )
            if isinstance(m, Message)
        ]
        observations = [
            o
            for o in await self.store.find(agent, Tier.OBSERVATION, sfilter, limit=MAX_SESSION_NODES)
            if isinstance(o, Observation)
        ]
        cfg = self.config.chunking
        transcript = _group_lines(
            [(m.id, f"{m.sender_name}: {m.content}", m.timestamp, [m.id], m.visibility) for m in messages],
            cfg.max_chunk_tokens,
            cfg.min_chunk_tokens,
            cfg.overlap(),
        )
        seen: set[str] = set()
        obs_lines: list[Line] = []
        for o in sorted(observations, key=lambda o: (o.observed_at, o.id)):
            key = " ".join(o.content.lower().split())
            if key in seen:
                continue
            seen.add(key)
            obs_lines.append(
                (o.id, o.content, o.observed_at, [o.message_id] if o.message_id else [], o.visibility)
            )
        obs_pieces = _group_lines(obs_lines, cfg.max_chunk_tokens, cfg.min_chunk_tokens, cfg.overlap())
        # The summary is one public node: it draws only on turns everyone may see.
        summary_text = extractive_summary([m for m in messages if m.visibility in ("", "public")])
        # The session's own chunks carry it as their session too: that column is indexed, so the
        # lookup reads this session's rows, not every chunk's JSON (linear in the store before).
        existing = await self.store.find(
            agent,
            Tier.CHUNK,
            sfilter & Eq("parent_id", session_node_id),
            limit=MAX_SESSION_NODES,
            order_by="id",
        )
        old = {c.id: c for c in existing if isinstance(c, Chunk)}
        wanted = self._chunks(agent, session, "session", transcript) + self._chunks(
            agent, session, "observation", obs_pieces
        )
        changed = [c for c in wanted if c.id not in old or old[c.id].text != c.text]
        stale = [cid for cid in old if cid not in {c.id for c in wanted}]
        vectors = await self._chunk_vectors(agent, changed) if changed and self.embedder is not None else None
        summary_id = make_id("sum", agent, session_node_id)
        old_summary = await self.store.get(agent, summary_id)
        summary_changed = bool(summary_text) and (
            not isinstance(old_summary, Summary) or old_summary.text != summary_text
        )
        rebuilt = bool(changed or stale or summary_changed)
        ended = session.ended_at or (utcnow() if close else None)
        if rebuilt or session.finalized_message_count != len(messages) or (close and not session.ended_at):
            async with self.store.unit(agent) as u:
                self._write(u, session_node_id, changed, stale, vectors)
                if summary_changed:
                    u.put(Summary(id=summary_id, agent=agent, session_id=session_node_id, text=summary_text))
                    u.put_edge(Edge(type=EdgeType.SUMMARIZES, src=summary_id, dst=session_node_id))
                current = await u.get(session_node_id)
                if isinstance(current, Session):
                    u.put(
                        current.model_copy(
                            update={
                                "finalized_at": utcnow(),
                                "finalized_message_count": len(messages),
                                "ended_at": ended if close else current.ended_at,
                            }
                        )
                    )
        return FinalizeReport(
            transcript_chunks=len(transcript),
            observation_chunks=len(obs_pieces),
            rebuilt=rebuilt,
            ended_at=ended if close else session.ended_at,
            summary_id=summary_id if summary_text else None,
        )

    @staticmethod
    def _chunks(agent: str, session: Session, kind: str, pieces: list[_Piece]) -> list[Chunk]:
        out = []
        for i, p in enumerate(pieces):
            out.append(
                Chunk(
                    id=chunk_id(agent, session.id, kind, i),
                    agent=agent,
                    parent_id=session.id,
                    parent_tier=Tier.SESSION,
                    chunk_type="session" if kind == "session" else "observation",
                    index=i,
                    text=p.text,
                    token_count=count_tokens(p.text),
                    heading=f"{session.external_id} ({session.started_at:%d %B %Y})",
                    session_id=session.id,
                    start_time=p.start_time,
                    end_time=p.end_time,
                    covered_ids=p.covered,
                    metadata={"source_message_ids": p.sources},
                    visibility=p.visibility,
                )
            )
        return out

    async def _chunk_vectors(self, agent: str, chunks: list[Chunk]) -> list[np.ndarray]:
        """A chunk's vector is the normalised mean of its members' vectors (its turns, or its
        observations), which P7a already computed; only chunks with a member still unembedded are
        embedded from their text. This halves the CPU of ingest with the chunk meaning preserved."""
        member_ids = sorted({m for c in chunks for m in c.covered_ids})
        have = await self.store.get_vectors(agent, member_ids)
        out: list[np.ndarray | None] = []
        missing: list[int] = []
        for i, c in enumerate(chunks):
            vecs = [have[m] for m in c.covered_ids if m in have]
            if (
                c.covered_ids
                and len(vecs) == len(c.covered_ids)
                and c.chunk_type in ("session", "observation")
            ):
                mean = np.mean(np.stack(vecs), axis=0)
                norm = float(np.linalg.norm(mean))
                out.append(mean / norm if norm > 1e-12 else None)
            else:
                out.append(None)
            if out[-1] is None:
                missing.append(i)
        if missing:
            fresh = await self.embedder.embed_documents([chunks[i].text for i in missing])  # type: ignore[attr-defined]
            for j, i in enumerate(missing):
                out[i] = fresh[j]
        return [v for v in out if v is not None]

    @staticmethod
    def _write(
        u: UnitOfWork, session_node_id: str, changed: list[Chunk], stale: list[str], vectors: object
    ) -> None:
        for cid in stale:
            u.delete_node(cid)
        for i, c in enumerate(changed):
            vec = vectors[i] if vectors is not None else None  # type: ignore[index]
            u.put(c, vec)
            u.put_edge(Edge(type=EdgeType.HAS_CHUNK, src=session_node_id, dst=c.id, props={"index": c.index}))
