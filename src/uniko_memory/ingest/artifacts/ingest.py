"""Artifact ingest: a document's bytes, its Artifact node and its Chunks commit in one store unit.

Identity: the Artifact id is derived from the agent and the artifact's external id, which is the
caller's ``external_id`` or, without one, ``sha256:<hex digest>`` of the bytes. So identical bytes
ingested without an id deduplicate, two caller ids over the same bytes stay two Artifacts (sharing
one content-addressed blob), re-ingesting the same bytes under the same id is a no-op, and the same
id with different bytes raises ``IdConflict`` (as turns do).

Secrets are masked in the extracted text (and title) before chunking, so no stored or embedded text
holds them. The original bytes cannot be masked: when secrets were found, the blob is not stored
unless ``IngestConfig.store_artifact_bytes_with_secrets`` says so (the Artifact keeps its SHA-256).

Chunk vectors are computed after the commit (``embed``): an artifact is BM25-searchable as soon as
the unit commits and vector-searchable once its chunks are embedded.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ...config import UnikoConfig
from ...errors import IdConflict, ValidationError
from ...model import (
    Artifact,
    Direction,
    Edge,
    EdgeType,
    Session,
    Tier,
    content_hash,
    make_id,
    session_id,
)
from ...model.time import utcnow
from ...model.visibility import PUBLIC
from ...security import describe, scanner_for
from ...store.protocol import Store, UnitOfWork
from ..chunk_nodes import put_chunks
from ..chunking import TextChunk, chunk_text
from .extract import Extraction, Section, extract
from .formats import PDF, resolve_mime

log = logging.getLogger(__name__)

#: What an artifact can be given as: a file path, or the document's bytes.
ArtifactSource = str | Path | bytes | bytearray | memoryview


class ArtifactReport(BaseModel):
    """What one ingested document became."""

    artifact_id: str  # the external id: the caller's, or "sha256:<digest>"
    artifact_node_id: str
    sha256: str
    size: int
    mime_type: str
    title: str = ""
    chunk_node_ids: list[str] = Field(default_factory=list)
    page_count: int | None = None
    extraction_failed: bool = False
    extraction_error: str | None = None
    #: Secrets masked before storing (each occurrence, in the text and the title; 0 on a replay).
    secrets_redacted: int = 0
    #: Whether the original bytes are in the store (``Store.get_blob(sha256)``).
    bytes_stored: bool = False
    #: The same bytes were already stored under this id: nothing was written.
    was_replay: bool = False
    #: Chunks embedded by this call; ``embedding_error`` says why none were, if the embedder failed.
    embedded: int = 0
    embedding_error: str | None = None

    @property
    def chunks(self) -> int:
        return len(self.chunk_node_ids)


def artifact_node_id(agent: str, external_id: str) -> str:
    return make_id("art", agent, external_id)


def blob_ref(sha256: str) -> str:
    """The ``HAS_CONTENT`` edge target: blobs are addressed by digest, not by node id."""
    return f"blob:{sha256}"


@dataclass
class _Loaded:
    data: bytes
    mime_type: str
    name: str | None = None
    path: str | None = None


@dataclass
class _Draft:
    extraction: Extraction
    title: str
    chunks: list[tuple[TextChunk, int | None]] = field(default_factory=list)  # (chunk, page)
    secrets: int = 0
    unsafe_bytes: bool = False  # the raw bytes hold secrets the stored text does not
    source_path: str | None = None
    error: str | None = None


def _too_big(size: int, limit: int, what: str) -> ValidationError:
    return ValidationError(
        f"{what} is {size:,} bytes, over the limit of {limit:,} (IngestConfig.max_artifact_bytes)"
    )


def load_source(source: ArtifactSource, mime_type: str | None, max_bytes: int) -> _Loaded:
    """Read a path or take bytes; check the size limit and resolve the type (blocking: run in a thread)."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if len(data) > max_bytes:
            raise _too_big(len(data), max_bytes, "the artifact")
        return _Loaded(data, resolve_mime(mime_type, None, data))
    if not isinstance(source, str | Path):
        raise ValidationError(f"an artifact is a path or bytes, got {type(source).__name__}")
    path = Path(source)
    mime = resolve_mime(mime_type, path.name, b"") if mime_type or path.suffix else None  # before reading
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_big(size, max_bytes, str(path))
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read artifact file {str(path)!r}: {exc.strerror or exc}") from None
    return _Loaded(data, mime or resolve_mime(None, path.name, data), path.name, str(source))


class ArtifactIngest:
    """Stores documents as Artifacts with Chunks for one store, config and (optional) embedder."""

    def __init__(self, store: Store, config: UnikoConfig, embedder: Any = None) -> None:
        self.store = store
        self.config = config
        self.embedder = embedder

    async def ingest(
        self,
        agent: str,
        source: ArtifactSource,
        *,
        title: str | None = None,
        mime_type: str | None = None,
        external_id: str | None = None,
        session: str | None = None,
        visibility: str = PUBLIC,
        embed: bool = True,
    ) -> ArtifactReport:
        """Store ``source`` and return what it became; ``embed`` computes chunk vectors after the commit."""
        ext = _check_args(external_id, session, visibility, title)
        if self.config.ingest.redact_secrets:  # ids cannot be masked: refused, as for turns
            scanner = scanner_for(tuple(self.config.ingest.secret_patterns_extra))
            ids = {"external_id": ext, "session id": session, "visibility": visibility}
            scanner.check_ids(ids, "the artifact")
        loaded = await asyncio.to_thread(
            load_source, source, mime_type, self.config.ingest.max_artifact_bytes
        )
        if not loaded.data:
            raise ValidationError("the artifact is empty; nothing to remember")
        sha = content_hash(loaded.data)
        ext = ext or f"sha256:{sha}"
        node_id = artifact_node_id(agent, ext)
        existing = await self.store.get(agent, node_id)
        if existing is not None:
            return await self._replay(agent, existing, sha, embed)
        draft = await asyncio.to_thread(self._prepare, loaded, title)
        sid = session_id(agent, session) if session else None
        now = utcnow()
        keep_bytes = not draft.unsafe_bytes or self.config.ingest.store_artifact_bytes_with_secrets
        ex = draft.extraction
        node = Artifact(
            id=node_id,
            agent=agent,
            external_id=ext,
            title=draft.title,
            mime_type=loaded.mime_type,
            sha256=sha,
            size=len(loaded.data),
            source_path=draft.source_path,
            session_id=sid,
            extraction_failed=ex.failed,
            extraction_error=draft.error,
            page_count=ex.page_count,
            visibility=visibility,
            created_at=now,
        )
        chunk_ids: list[str] = []
        async with self.store.unit(agent) as u:
            # Re-read under the unit: a concurrent ingest of the same id may have committed meanwhile.
            raced = await u.get(node_id)
            if raced is None:
                if keep_bytes:
                    u.put_blob(sha, loaded.data)
                    u.put_edge(
                        Edge(type=EdgeType.HAS_CONTENT, src=node_id, dst=blob_ref(sha), props={"sha256": sha})
                    )
                u.put(node)
                if sid is not None and session is not None:
                    await _attach(u, agent, node_id, sid, session, now)
                chunk_ids = _write_chunks(u, node, draft, now)
        if raced is not None:  # replayed after leaving the unit: embedding opens a unit of its own
            return await self._replay(agent, raced, sha, embed)
        if ex.failed:
            log.warning("stored artifact %s without (all of) its text: %s", node_id, draft.error)
        report = ArtifactReport(
            artifact_id=ext,
            artifact_node_id=node_id,
            sha256=sha,
            size=node.size,
            mime_type=node.mime_type,
            title=node.title,
            chunk_node_ids=chunk_ids,
            page_count=node.page_count,
            extraction_failed=node.extraction_failed,
            extraction_error=node.extraction_error,
            secrets_redacted=draft.secrets,
            bytes_stored=keep_bytes,
        )
        return await self._embed_report(agent, report) if embed else report

    # ------------------------------------------------------------------ steps
    def _prepare(self, loaded: _Loaded, title: str | None) -> _Draft:
        """Extract, mask secrets, chunk (CPU only, no store)."""
        cfg = self.config.chunking
        ex = extract(loaded.data, loaded.mime_type, min_tokens=cfg.min_chunk_tokens)
        name_title = Path(loaded.name).stem if loaded.name else ""
        draft = _Draft(ex, title or ex.title or name_title, source_path=loaded.path, error=ex.error)
        counts: Counter[str] = Counter()
        aside: Counter[str] = Counter()  # in strings that do not come from the bytes
        if self.config.ingest.redact_secrets:
            scanner = scanner_for(tuple(self.config.ingest.secret_patterns_extra))
            masked_title = scanner.redact(draft.title)
            draft.title = masked_title.text
            if not title and ex.title:  # the document's own title: a secret in it is in the bytes
                counts += masked_title.counts
            else:  # the caller's title, or the file's name
                aside += masked_title.counts
            # The file's path and the extraction error are stored too (not from the bytes).
            for name in ("source_path", "error"):
                masked_field = scanner.redact_optional(getattr(draft, name))
                if masked_field is not None and masked_field.changed:
                    setattr(draft, name, masked_field.text)
                    aside += masked_field.counts
            for i, section in enumerate(ex.sections):
                masked = scanner.redact(section.text)
                if masked.changed:
                    counts += masked.counts
                    ex.sections[i] = Section(masked.text, section.offset, section.page)
            if ex.failed and loaded.mime_type != PDF:
                # Undecodable text was not scanned as text: look for secrets in its ASCII.
                draft.unsafe_bytes = bool(scanner.scan(loaded.data.decode("latin-1")))
        if counts:
            draft.unsafe_bytes = True
        counts += aside
        if counts:
            draft.secrets = counts.total()
            log.info(
                "masked %d secret(s) in an artifact before storing it: %s", draft.secrets, describe(counts)
            )
        for section in ex.sections:
            for c in chunk_text(
                section.text,
                max_tokens=cfg.max_chunk_tokens,
                min_tokens=cfg.min_chunk_tokens,
                overlap=cfg.overlap(),
            ):
                placed = TextChunk(
                    len(draft.chunks),
                    c.text,
                    section.offset + c.start,
                    section.offset + c.end,
                    c.token_count,
                    c.heading,
                )
                draft.chunks.append((placed, section.page))
        return draft

    async def _replay(self, agent: str, existing: Any, sha: str, embed: bool) -> ArtifactReport:
        if not isinstance(existing, Artifact) or existing.sha256 != sha:
            ext = getattr(existing, "external_id", existing.id)
            raise IdConflict(f"artifact id {ext!r} was already stored with different content")
        edges = await self.store.neighbors(agent, [existing.id], [EdgeType.HAS_CHUNK], Direction.OUT)
        edges.sort(key=lambda e: (e.props.get("index", 0), e.dst))
        report = ArtifactReport(
            artifact_id=existing.external_id,
            artifact_node_id=existing.id,
            sha256=sha,
            size=existing.size,
            mime_type=existing.mime_type,
            title=existing.title,
            chunk_node_ids=[e.dst for e in edges],
            page_count=existing.page_count,
            extraction_failed=existing.extraction_failed,
            extraction_error=existing.extraction_error,
            bytes_stored=await self.store.get_blob(sha) is not None,
            was_replay=True,
        )
        # A replay also embeds what an earlier call left unembedded (a crash, an embedder outage).
        return await self._embed_report(agent, report) if embed else report

    async def _embed_report(self, agent: str, report: ArtifactReport) -> ArtifactReport:
        """Embed after the commit; a failure is reported, not raised: the artifact is stored."""
        try:
            report.embedded = await self.embed(agent, report.artifact_node_id, report.chunk_node_ids)
        except Exception as exc:
            log.warning(
                "artifact %s stored but not embedded: %s", report.artifact_node_id, exc, exc_info=True
            )
            report.embedding_error = f"{type(exc).__name__}: {exc}"
        return report

    async def embed(self, agent: str, artifact_id: str, chunk_ids: list[str]) -> int:
        """Vectors for the chunks that have none; the Artifact gets the mean of its chunk vectors."""
        if self.embedder is None or not chunk_ids:
            return 0
        have = await self.store.get_vectors(agent, chunk_ids)
        nodes = await self.store.get_many(agent, [c for c in chunk_ids if c not in have])
        todo = [(cid, text) for cid in chunk_ids if cid in nodes and (text := nodes[cid].search_text())]
        if not todo:
            return 0
        step = self.config.ingest.post_ingest_batch
        parts = [
            np.asarray(
                await self.embedder.embed_documents([t for _, t in todo[i : i + step]]), dtype=np.float32
            )
            for i in range(0, len(todo), step)
        ]
        vectors = np.vstack(parts)
        async with self.store.unit(agent) as u:
            for (cid, _), vec in zip(todo, vectors, strict=True):
                u.set_vector(cid, Tier.CHUNK, vec)  # skipped by the store if the chunk is gone or redacted
            pooled = np.vstack([vectors, *have.values()]).mean(axis=0) if have else vectors.mean(axis=0)
            if float(np.linalg.norm(pooled)) > 1e-6:
                u.set_vector(artifact_id, Tier.ARTIFACT, pooled)
        return len(todo)


def _check_args(
    external_id: str | None, session: str | None, visibility: str, title: str | None
) -> str | None:
    if external_id is not None and (not isinstance(external_id, str) or not external_id.strip()):
        raise ValidationError("external_id must be a non-empty string")
    if external_id is not None and len(external_id) > 256:
        raise ValidationError("external_id must be at most 256 characters")
    if session is not None and (not isinstance(session, str) or not session.strip()):
        raise ValidationError("session id must be a non-empty string")
    if not isinstance(visibility, str):
        raise ValidationError(f"visibility must be a string, got {type(visibility).__name__}")
    if title is not None and not isinstance(title, str):
        raise ValidationError(f"title must be a string, got {type(title).__name__}")
    return external_id.strip() if external_id is not None else None


async def _attach(u: UnitOfWork, agent: str, node_id: str, sid: str, external: str, now: Any) -> None:
    """Link the artifact to its session, creating the session on first use (as a turn would)."""
    if await u.get(sid) is None:
        u.put(Session(id=sid, agent=agent, external_id=external, started_at=now, last_activity_at=now))
    u.put_edge(Edge(type=EdgeType.ATTACHED_TO, src=node_id, dst=sid))


def _write_chunks(u: UnitOfWork, node: Artifact, draft: _Draft, now: Any) -> list[str]:
    return put_chunks(
        u,
        agent=node.agent,
        parent_id=node.id,
        parent_tier=Tier.ARTIFACT,
        chunk_type="page" if node.mime_type == PDF else "artifact",
        chunks=[(c, {"page": page} if page is not None else {}) for c, page in draft.chunks],
        session_id=node.session_id,
        at=now,
        visibility=node.visibility,
    )
