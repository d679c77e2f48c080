"""Export one agent's memory as JSONL records and import it into another store (``uniko export`` /
``uniko import``), through the store protocol only, so it works on every backend.

The file is one JSON object a line, ``"record"`` naming its kind:

- ``header`` first: ``format`` (``EXPORT_FORMAT``), ``version``, ``agent``, ``embedding_model`` and
  ``embedding_dim`` (the vectors' model; importing into a store of another model is refused), the
  exporting ``uniko_version`` and ``exported_at``;
- ``node``: ``tier``, ``node`` (the node's JSON, every field) and ``vector`` (its stored vector as
  base64 little-endian float32, or null), for every node of the agent, redacted ones included:
  a redacted node is exported as stored, blank and flagged, without a vector, so a redaction
  survives the round trip;
- ``edge``: ``edge`` (``type``, ``src``, ``dst``, ``props``);
- ``blob``: ``sha256`` and ``data`` (base64), the bytes of the agent's Artifacts;
- ``meta``: ``key`` and ``value``, the agent's forget tombstones (so a forgotten participant stays
  forgotten: a later forget reports "nothing to do" rather than "never seen");
- ``end`` last: ``counts`` of each record kind, so a truncated file is refused.

Import reads and checks the whole file before it writes anything, refuses an agent that already
has memory in the target, and writes everything in one unit of work (all or nothing) with the same
ids, fields and vectors, so recall over the imported memory gives what it gave over the original.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field
from pydantic import ValidationError as PydanticValidationError

from .consolidation.forget.journal import pending_jobs, tombstone_key
from .errors import ValidationError
from .model import Direction, Edge, Node, Tier, node_class
from .model.time import UtcDatetime, utcnow
from .store.protocol import Store
from .store.validation import MAX_FIND_LIMIT

EXPORT_FORMAT = "uniko-memory/agent-export"
EXPORT_VERSION = 1
#: Node ids per ``neighbors`` / ``get_vectors`` call while exporting.
EXPORT_BATCH = 500
#: Agent-scoped meta records an export carries, by the key function that names them.
_META_KEYS: dict[str, Callable[[str], str]] = {"forget.tombstones": tombstone_key}

RecordKind = Literal["header", "node", "edge", "blob", "meta", "end"]


class ExportError(ValidationError):
    """An export file that cannot be imported (malformed, truncated, another model, ...); nothing
    was written. The message names the line."""


class ExportHeader(BaseModel):
    format: str = EXPORT_FORMAT
    version: int = EXPORT_VERSION
    agent: str
    embedding_model: str | None = None
    embedding_dim: int | None = None
    uniko_version: str = ""
    exported_at: UtcDatetime = Field(default_factory=utcnow)


class AgentExport(BaseModel):
    """A whole export, read and checked (``read_export``); what ``import_agent`` writes."""

    model_config = {"arbitrary_types_allowed": True}

    header: ExportHeader
    nodes: list[tuple[Node, np.ndarray | None]] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    blobs: dict[str, bytes] = Field(default_factory=dict)
    meta: dict[str, str] = Field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {
            "node": len(self.nodes),
            "edge": len(self.edges),
            "blob": len(self.blobs),
            "meta": len(self.meta),
        }


def _vector_text(vector: np.ndarray | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector_of(text: Any, where: str) -> np.ndarray | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ExportError(f"{where}: 'vector' must be base64 text or null")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ExportError(f"{where}: 'vector' is not base64") from None
    if not raw or len(raw) % 4:
        raise ExportError(f"{where}: 'vector' is not a float32 array")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


async def export_agent(
    store: Store, agent: str, *, uniko_version: str = "", progress: Callable[[int], None] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The records of ``agent``'s memory, header first and ``end`` last (see the module docstring).

    ``progress`` is called with the number of nodes written after each batch. Refuses (``ExportError``)
    an agent with a forget job still unfinished: open the store with ``Uniko.open`` (which finishes
    it) and export again.
    """
    if await pending_jobs(store, agent):
        raise ExportError(
            f"agent {agent!r} has a forget job that is not finished; open the store with Uniko.open "
            "(any `uniko recall` or `uniko forget` does) to finish it, then export"
        )
    model = await store.get_meta("embedding_model")
    dim = await store.get_meta("embedding_dim")
    yield {
        "record": "header",
        **ExportHeader(
            agent=agent,
            embedding_model=model,
            embedding_dim=int(dim) if dim else None,
            uniko_version=uniko_version,
        ).model_dump(mode="json"),
    }
    counts = {"node": 0, "edge": 0, "blob": 0, "meta": 0}
    blobs: list[str] = []
    for tier in Tier:
        found = await store.find(agent, tier, limit=MAX_FIND_LIMIT, order_by="id", include_redacted=True)
        for start in range(0, len(found), EXPORT_BATCH):
            batch = found[start : start + EXPORT_BATCH]
            ids = [n.id for n in batch]
            vectors = await store.get_vectors(agent, ids)
            for node in batch:
                yield {
                    "record": "node",
                    "tier": tier.value,
                    "node": node.model_dump(mode="json"),
                    # a redacted node is never searched: its vector stays behind too
                    "vector": None if node.redacted else _vector_text(vectors.get(node.id)),
                }
                if tier is Tier.ARTIFACT and not node.redacted:
                    blobs.append(getattr(node, "sha256", ""))
            counts["node"] += len(batch)
            edges = await store.neighbors(agent, ids, None, Direction.OUT)
            for edge in sorted(edges, key=Edge.key):
                yield {"record": "edge", "edge": edge.model_dump(mode="json")}
            counts["edge"] += len(edges)
            if progress is not None:
                progress(len(batch))
    for sha in dict.fromkeys(b for b in blobs if b):
        data = await store.get_blob(sha)
        if data is not None:
            yield {"record": "blob", "sha256": sha, "data": base64.b64encode(data).decode("ascii")}
            counts["blob"] += 1
    for name, key_of in _META_KEYS.items():
        value = await store.get_meta(key_of(agent))
        if value is not None:
            yield {"record": "meta", "key": name, "value": value}
            counts["meta"] += 1
    yield {"record": "end", "counts": counts}


def export_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Each record as one line of JSON (no trailing newline)."""
    for record in records:
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def read_export(lines: Iterable[str]) -> AgentExport:
    """Parse and check a whole export; ``ExportError`` names the first bad line."""
    header: ExportHeader | None = None
    out: AgentExport | None = None
    end: dict[str, int] | None = None
    for lineno, line in enumerate(lines, 1):
        where = f"line {lineno}"
        if not line.strip():
            continue
        if end is not None:
            raise ExportError(f"{where}: a record after the 'end' record")
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("record"), str):
            raise ExportError(f"{where}: expected an object with a 'record' kind")
        kind = rec.pop("record")
        if header is None or out is None:
            if kind != "header":
                raise ExportError(f"{where}: the first record must be the 'header' (is this a uniko export?)")
            header = _header(rec, where)
            out = AgentExport(header=header)
            continue
        try:
            if kind == "node":
                node = node_class(str(rec.get("tier"))).model_validate(rec.get("node"))
                if node.agent != header.agent:
                    raise ExportError(
                        f"{where}: node {node.id} belongs to agent {node.agent!r}, not {header.agent!r}"
                    )
                out.nodes.append((node, _vector_of(rec.get("vector"), where)))
            elif kind == "edge":
                out.edges.append(Edge.model_validate(rec.get("edge")))
            elif kind == "blob":
                sha, data = rec.get("sha256"), rec.get("data")
                if not isinstance(sha, str) or not isinstance(data, str):
                    raise ExportError(f"{where}: a blob needs 'sha256' and 'data' strings")
                out.blobs[sha] = base64.b64decode(data, validate=True)
            elif kind == "meta":
                key, value = rec.get("key"), rec.get("value")
                if key not in _META_KEYS or not isinstance(value, str):
                    raise ExportError(f"{where}: unknown meta record {key!r}; known: {', '.join(_META_KEYS)}")
                out.meta[key] = value
            elif kind == "end":
                end = rec.get("counts") if isinstance(rec.get("counts"), dict) else {}
            else:
                raise ExportError(f"{where}: unknown record kind {kind!r}")
        except (PydanticValidationError, ValidationError) as exc:
            raise ExportError(f"{where}: invalid {kind} record: {_first_error(exc)}") from None
        except ValueError as exc:
            if isinstance(exc, ExportError):
                raise
            raise ExportError(f"{where}: invalid {kind} record: {exc}") from None
    if out is None:
        raise ExportError("empty file: no 'header' record")
    if end is None:
        raise ExportError("no 'end' record: the file is truncated")
    if {k: int(v) for k, v in end.items()} != out.counts():
        raise ExportError(f"the 'end' record counts {end}, the file holds {out.counts()}: it is damaged")
    return out


def _header(rec: dict[str, Any], where: str) -> ExportHeader:
    if rec.get("format") != EXPORT_FORMAT:
        raise ExportError(
            f"{where}: not a uniko export (format {rec.get('format')!r}, expected {EXPORT_FORMAT!r})"
        )
    if rec.get("version") != EXPORT_VERSION:
        raise ExportError(
            f"{where}: export version {rec.get('version')!r}; this uniko reads version {EXPORT_VERSION}"
        )
    try:
        return ExportHeader.model_validate(rec)
    except PydanticValidationError as exc:
        raise ExportError(f"{where}: invalid header: {_first_error(exc)}") from None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, PydanticValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        return f"{loc}: {err.get('msg')}" if loc else str(err.get("msg"))
    return str(exc)


class ImportReport(BaseModel):
    agent: str
    nodes: int = 0
    edges: int = 0
    blobs: int = 0
    meta: int = 0


async def check_import(store: Store, data: AgentExport, *, embedding_model: str | None) -> None:
    """Refuse (``ExportError``) an import that would mix memories: the agent already has nodes or
    tombstones in ``store``, or the vectors come from another embedding model."""
    agent = data.header.agent
    if await store.count(agent) or any([await store.get_meta(k(agent)) for k in _META_KEYS.values()]):
        raise ExportError(
            f"agent {agent!r} already has memory in the target store; import into a fresh store "
            "(or forget that agent there first)"
        )
    exported = data.header.embedding_model
    if (
        exported
        and embedding_model
        and exported != embedding_model
        and any(v is not None for _, v in data.nodes)
    ):
        raise ExportError(
            f"the export's vectors come from embedding model {exported!r}; the target store uses "
            f"{embedding_model!r}. Import into a store opened with {exported!r}."
        )


async def import_agent(
    store: Store, data: AgentExport, *, progress: Callable[[int], None] | None = None
) -> ImportReport:
    """Write an export into ``store`` in one unit of work (all or nothing); call ``check_import``
    first. ``progress`` is called with the number of nodes buffered, then once more on commit."""
    agent = data.header.agent
    async with store.unit(agent) as unit:
        for sha, blob in data.blobs.items():
            unit.put_blob(sha, blob)
        for i, (node, vector) in enumerate(data.nodes, 1):
            unit.put(node, vector)
            if progress is not None and i % EXPORT_BATCH == 0:
                progress(EXPORT_BATCH)
        for edge in data.edges:
            unit.put_edge(edge)
    if progress is not None and len(data.nodes) % EXPORT_BATCH:
        progress(len(data.nodes) % EXPORT_BATCH)
    for name, value in data.meta.items():
        await store.set_meta(_META_KEYS[name](agent), value)
    return ImportReport(
        agent=agent, nodes=len(data.nodes), edges=len(data.edges), blobs=len(data.blobs), meta=len(data.meta)
    )


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "AgentExport",
    "ExportError",
    "ExportHeader",
    "ImportReport",
    "check_import",
    "export_agent",
    "export_lines",
    "import_agent",
    "read_export",
]
