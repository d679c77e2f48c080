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
has memory in the target, and writes everything, tombstones included, in one unit of work (all or
nothing) with the same ids, fields and vectors, so recall over the imported memory gives what it
gave over the original.

The file is not trusted: ``read_export`` applies the checks ``observe`` applies to a turn (its
length, ``IngestConfig.max_turn_chars``, and the other ``IngestConfig`` limits; normalised text),
refuses a node marked redacted that still holds content (or a vector), a node id, edge, document or
meta record given twice, a tombstone record ``forget`` could not read, a vector that is not a
finite vector of the header's dimension, a document whose bytes do not match its hash, and any
malformed record (bad counts, a missing node, JSON nested too deeply) with an ``ExportError`` that
names the line.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from .config import IngestConfig
from .consolidation.forget.journal import Tombstone, pending_jobs, tombstone_key
from .errors import ValidationError
from .ingest.turn import MAX_ID_CHARS, clean_content, metadata_bytes
from .model import Direction, Edge, Message, Node, Tier, node_class
from .model.time import UtcDatetime, utcnow
from .store.buffered_unit import serialize_node, serialize_props
from .store.protocol import Store
from .store.validation import MAX_FIND_LIMIT, check_agent
from .store.vector_math import as_unit_vector

EXPORT_FORMAT = "uniko-memory/agent-export"
EXPORT_VERSION = 1
#: Node ids per ``neighbors`` / ``get_vectors`` call while exporting.
EXPORT_BATCH = 500
#: Agent-scoped meta records an export carries, by the key function that names them.
_META_KEYS: dict[str, Callable[[str], str]] = {"forget.tombstones": tombstone_key}
#: What ``forget`` reads from the tombstone record (``consolidation.forget.journal``).
_STONES = TypeAdapter(dict[str, Tombstone])
_KINDS = ("node", "edge", "blob", "meta")

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


def read_export(lines: Iterable[str], *, limits: IngestConfig | None = None) -> AgentExport:
    """Parse and check a whole export; ``ExportError`` names the first bad line.

    ``limits``: the turn limits ``observe`` enforces (the defaults unless given)."""
    limits = limits or IngestConfig()
    header: ExportHeader | None = None
    out: AgentExport | None = None
    end: dict[str, int] | None = None
    node_ids: set[str] = set()
    edge_keys: set[tuple[str, str, str]] = set()
    dim: int | None = None
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
        except RecursionError:
            raise ExportError(f"{where}: invalid JSON: nested too deeply") from None
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
                if not isinstance(rec.get("node"), dict):
                    raise ExportError(f"{where}: a node record needs a 'node' object")
                node = node_class(str(rec.get("tier"))).model_validate(rec["node"])
                if node.agent != header.agent:
                    raise ExportError(
                        f"{where}: node {node.id} belongs to agent {node.agent!r}, not {header.agent!r}"
                    )
                if node.id in node_ids:
                    raise ExportError(f"{where}: node {node.id} appears twice in the file")
                vector = _vector_of(rec.get("vector"), where)
                if vector is not None:
                    dim = header.embedding_dim or dim or int(vector.shape[0])
                    _check_vector(vector, dim, node.id)
                _check_node(node, vector, limits)
                node_ids.add(node.id)
                out.nodes.append((node, vector))
            elif kind == "edge":
                edge = Edge.model_validate(rec.get("edge"))
                if edge.key() in edge_keys:
                    raise ExportError(f"{where}: edge {' '.join(edge.key())} appears twice in the file")
                serialize_props(edge)
                edge_keys.add(edge.key())
                out.edges.append(edge)
            elif kind == "blob":
                sha, data = rec.get("sha256"), rec.get("data")
                if not isinstance(sha, str) or not isinstance(data, str):
                    raise ExportError(f"{where}: a blob needs 'sha256' and 'data' strings")
                if sha in out.blobs:
                    raise ExportError(f"{where}: document {sha} appears twice in the file")
                blob = base64.b64decode(data, validate=True)
                if hashlib.sha256(blob).hexdigest() != sha:
                    raise ExportError(f"{where}: the document's bytes do not match its sha256")
                out.blobs[sha] = blob
            elif kind == "meta":
                key, value = rec.get("key"), rec.get("value")
                if not isinstance(key, str) or key not in _META_KEYS or not isinstance(value, str):
                    raise ExportError(f"{where}: unknown meta record {key!r}; known: {', '.join(_META_KEYS)}")
                if key in out.meta:
                    raise ExportError(f"{where}: meta record {key!r} appears twice in the file")
                out.meta[key] = _tombstones(value, where)
            elif kind == "end":
                end = _counts(rec.get("counts"), where)
            else:
                raise ExportError(f"{where}: unknown record kind {kind!r}")
        except (PydanticValidationError, ValidationError) as exc:
            if isinstance(exc, ExportError):  # every refusal names its line
                raise exc if str(exc).startswith(where) else ExportError(f"{where}: {exc}") from None
            raise ExportError(f"{where}: invalid {kind} record: {_first_error(exc)}") from None
        except RecursionError:
            raise ExportError(f"{where}: invalid {kind} record: nested too deeply") from None
        except (ValueError, TypeError) as exc:
            raise ExportError(f"{where}: invalid {kind} record: {exc}") from None
    if out is None:
        raise ExportError("empty file: no 'header' record")
    if end is None:
        raise ExportError("no 'end' record: the file is truncated")
    if {k: end.get(k, 0) for k in _KINDS} != out.counts():
        raise ExportError(f"the 'end' record counts {end}, the file holds {out.counts()}: it is damaged")
    return out


def _counts(counts: Any, where: str) -> dict[str, int]:
    """The 'end' record's counts: each record kind's number, a whole number."""
    if not isinstance(counts, dict) or not all(
        k in _KINDS and type(v) is int and v >= 0 for k, v in counts.items()
    ):
        raise ExportError(
            f"{where}: the 'end' record's 'counts' must give {', '.join(_KINDS)} as whole numbers"
        )
    return counts


def _tombstones(value: str, where: str) -> str:
    """A tombstone record ``forget`` can read (else refused), as ``forget`` writes it."""
    try:
        stones = _STONES.validate_json(value)
    except PydanticValidationError as exc:
        raise ExportError(
            f"{where}: the forget.tombstones record is not valid: {_first_error(exc)}"
        ) from None
    for pid, stone in stones.items():
        if not pid or len(pid) > MAX_ID_CHARS or len(stone.entity or "") > MAX_ID_CHARS:
            raise ExportError(f"{where}: the forget.tombstones record names an id that is empty or too long")
    return _STONES.dump_json(stones).decode()


def _check_vector(vector: np.ndarray, dim: int, node_id: str) -> None:
    """What the store would refuse at commit (``as_unit_vector``), refused here."""
    if vector.shape[0] != dim:
        raise ExportError(f"node {node_id}: its vector has {vector.shape[0]} dimensions, the export's {dim}")
    try:
        as_unit_vector(vector, dim)
    except ValueError as exc:
        raise ExportError(f"node {node_id}: {exc}") from None


def _check_node(node: Node, vector: np.ndarray | None, limits: IngestConfig) -> None:
    """The checks ``observe`` applies to what it stores, applied to an imported node (``ExportError``)."""
    label = f"node {node.id}"
    if node.redacted:
        blank = node.redacted_copy()
        held = [f for f in node.content_fields if getattr(node, f) != getattr(blank, f)]
        if held:
            raise ExportError(
                f"{label} is marked redacted but still holds {', '.join(held)}: a redacted node is "
                "stored blank, so this file was not written by `uniko export` (or was edited)"
            )
        if vector is not None:
            raise ExportError(f"{label} is marked redacted but carries a vector of its content")
    for name in node.content_fields:
        value = getattr(node, name)
        if isinstance(value, str) and len(value) > limits.max_turn_chars:
            raise ExportError(
                f"{label} has {len(value):,} characters in {name}, over the limit of "
                f"{limits.max_turn_chars:,} (IngestConfig.max_turn_chars) that observe enforces"
            )
    if isinstance(node, Message):
        _check_message(node, label, limits)
    serialize_node(node)  # text the store cannot write (a lone surrogate, ...) is refused here


def _check_message(msg: Message, label: str, limits: IngestConfig) -> None:
    if not msg.redacted and not msg.content.strip():
        raise ExportError(f"{label} has empty content; observe never stores one")
    if clean_content(msg.content) != msg.content:
        raise ExportError(
            f"{label} holds characters observe removes (control characters, lone surrogates or "
            "carriage returns)"
        )
    for name in ("external_id", "sender_name"):
        if len(getattr(msg, name)) > MAX_ID_CHARS:
            raise ExportError(f"{label}: {name} is over the limit of {MAX_ID_CHARS} characters")
    if len(msg.addressed_to) > limits.max_addressed_to:
        raise ExportError(
            f"{label} is addressed to {len(msg.addressed_to):,} participants, over the limit of "
            f"{limits.max_addressed_to:,} (IngestConfig.max_addressed_to)"
        )
    if msg.metadata:
        size = metadata_bytes(msg.metadata, label)
        if size > limits.max_metadata_bytes:
            raise ExportError(
                f"{label} has {size:,} bytes of metadata, over the limit of "
                f"{limits.max_metadata_bytes:,} (IngestConfig.max_metadata_bytes)"
            )


def _header(rec: dict[str, Any], where: str) -> ExportHeader:
    if rec.get("format") != EXPORT_FORMAT:
        raise ExportError(
            f"{where}: not a uniko export (format {rec.get('format')!r}, expected {EXPORT_FORMAT!r})"
        )
    if type(rec.get("version")) is not int or rec.get("version") != EXPORT_VERSION:
        raise ExportError(
            f"{where}: export version {rec.get('version')!r}; this uniko reads version {EXPORT_VERSION}"
        )
    try:
        header = ExportHeader.model_validate(rec)
        check_agent(header.agent)
    except (PydanticValidationError, ValidationError) as exc:
        raise ExportError(f"{where}: invalid header: {_first_error(exc)}") from None
    return header


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
    tombstones in ``store``, or the vectors come from another embedding model or have another
    dimension than the store's."""
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
    dims = {int(v.shape[0]) for _, v in data.nodes if v is not None}
    if dims and store.dim is not None and dims != {store.dim}:
        raise ExportError(
            f"the export's vectors have {min(dims)} dimensions; the target store's have {store.dim}"
        )


async def import_agent(
    store: Store, data: AgentExport, *, progress: Callable[[int], None] | None = None
) -> ImportReport:
    """Write an export into ``store`` in one unit of work (all or nothing: the tombstones too);
    call ``check_import`` first. ``progress`` is called with the number of nodes buffered, then
    once more on commit."""
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
        for name, value in data.meta.items():
            unit.set_meta(_META_KEYS[name](agent), value)
    if progress is not None and len(data.nodes) % EXPORT_BATCH:
        progress(len(data.nodes) % EXPORT_BATCH)
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
