"""The Weaviate schema of a uniko store: collection names, typed properties, the schema version.

One multi-tenant collection per tier (``{prefix}{Tier}``: ``UnikoMessage``, ``UnikoFact`` …) plus
``{prefix}_Edges`` (multi-tenant), ``{prefix}_Meta`` and ``{prefix}_Blobs`` (shared). Every tier
object carries:

- ``node_id`` / ``session`` / ``participant`` / ``visibility``: exact-match text
  (``Tokenization.FIELD``, see ``field_text`` for the encoding that keeps empty and padded values exact);
- ``time``: NUMBER, epoch seconds of the tier's time field; ``redacted``: BOOL;
- ``search_text``: TEXT, WORD-tokenised, the only BM25-searchable property;
- ``data``: the node's JSON, neither filterable nor searchable (the source of truth on read);
- ``a_<attr>``: every scalar attribute of the tier's model, typed (TEXT/NUMBER/BOOL/DATE), for filters
  and ``find(order_by=...)``.

Vectors are self-provided, one named vector ``content`` (cosine). Uuids are ``to_uuid(node_id)``.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from ...model import NODE_TYPES, Node, Tier
from ...model.ids import to_uuid

#: Bumped when the stored layout changes; checked against ``{prefix}_Meta`` on open.
SCHEMA_VERSION = "1"
VECTOR_NAME = "content"
ATTR_PREFIX = "a_"
#: Properties every tier collection has (besides the ``a_*`` attributes).
DIMENSION_PROPS = ("node_id", "session", "participant", "visibility", "time", "redacted")
#: Attributes stored as dimension properties instead of ``a_*`` copies.
_AS_DIMENSION = {"id": "node_id", "visibility": "visibility", "redacted": "redacted"}

AttrKind = Literal["text", "number", "bool", "date", "opaque"]

_ESCAPE = "\ue000"


def field_text(value: str) -> str:
    """Encode an exact-match text value so FIELD tokenisation keeps it exact.

    FIELD tokenisation trims surrounding whitespace and drops an empty value (no token, nothing
    matches), so ``""`` and padded values are stored escaped (a private-use prefix plus the JSON
    of the value); every other value is stored as is.
    """
    if value and value == value.strip() and not value.startswith(_ESCAPE):
        return value
    import json

    return _ESCAPE + json.dumps(value)


def tier_collection(prefix: str, tier: Tier) -> str:
    return prefix + "".join(part.title() for part in tier.value.split("_"))


def edge_collection(prefix: str) -> str:
    return f"{prefix}_Edges"


def meta_collection(prefix: str) -> str:
    return f"{prefix}_Meta"


def blob_collection(prefix: str) -> str:
    return f"{prefix}_Blobs"


def node_uuid(node_id: str) -> str:
    return str(to_uuid(node_id))


def edge_uuid(edge_type: str, src: str, dst: str) -> str:
    return str(to_uuid(f"edge\0{edge_type}\0{src}\0{dst}"))


def meta_uuid(key: str) -> str:
    return str(to_uuid(f"meta\0{key}"))


def blob_uuid(sha256: str) -> str:
    return str(to_uuid(f"blob\0{sha256}"))


def pkey(uuid: str) -> float:
    """The paging key: 52 bits of the uuid as a NUMBER (exact in a double), for keyset paging past
    Weaviate's per-query maximum with numeric range filters (collisions are handled by the reader)."""
    return float(int(uuid.replace("-", "")[:13], 16))


def page_key() -> Any:
    from weaviate.classes.config import DataType, Property

    return Property(name="pkey", data_type=DataType.NUMBER, index_filterable=True, index_range_filters=True)


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(core type, optional) of an annotation: strips Annotated, Optional and ``X | None``."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(typing.get_args(annotation))
            if len(args) == 1:
                annotation = args[0]
                continue
            return annotation, optional
        return annotation, optional


def _kind(annotation: Any) -> AttrKind:
    core, _ = _unwrap(annotation)
    origin = typing.get_origin(core)
    if origin is Literal:
        values = typing.get_args(core)
        return "text" if all(isinstance(v, str) for v in values) else "opaque"
    if isinstance(core, type):
        if issubclass(core, bool):
            return "bool"
        if issubclass(core, Enum) and issubclass(core, str):
            return "text"
        if issubclass(core, str):
            return "text"
        if issubclass(core, (int, float)):
            return "number"
        if issubclass(core, datetime):
            return "date"
    return "opaque"


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: AttrKind
    optional: bool

    @property
    def prop(self) -> str:
        return _AS_DIMENSION.get(self.name, ATTR_PREFIX + self.name)


def tier_attrs(tier: Tier) -> dict[str, AttrSpec]:
    """Every model attribute of a tier, with how it is stored (``opaque``: only inside ``data``)."""
    cls: type[Node] = NODE_TYPES[tier]
    out: dict[str, AttrSpec] = {}
    for name, info in cls.model_fields.items():
        _, optional = _unwrap(info.annotation)
        out[name] = AttrSpec(name, _kind(info.annotation), optional)
    return out


def fingerprint() -> str:
    """A hash of every property the schema expects: changes when a node model gains or retypes an attribute."""
    import hashlib

    parts = [SCHEMA_VERSION]
    for tier in Tier:
        parts += [f"{tier.value}.{s.name}:{s.kind}" for s in tier_attrs(tier).values()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _datatypes() -> Any:
    from weaviate.classes.config import DataType

    return {"text": DataType.TEXT, "number": DataType.NUMBER, "bool": DataType.BOOL, "date": DataType.DATE}


def tier_properties(tier: Tier) -> list[Any]:
    """The ``Property`` list of a tier collection."""
    from weaviate.classes.config import DataType, Property, Tokenization

    def exact(name: str) -> Any:
        return Property(
            name=name,
            data_type=DataType.TEXT,
            tokenization=Tokenization.FIELD,
            index_filterable=True,
            index_searchable=False,
            index_range_filters=False,
        )

    props = [exact("node_id"), exact("session"), exact("participant"), exact("visibility")]
    props.append(
        Property(name="time", data_type=DataType.NUMBER, index_filterable=True, index_range_filters=True)
    )
    props.append(Property(name="redacted", data_type=DataType.BOOL, index_filterable=True))
    props.append(page_key())
    props.append(
        Property(
            name="search_text",
            data_type=DataType.TEXT,
            tokenization=Tokenization.WORD,
            index_filterable=False,
            index_searchable=True,
        )
    )
    props.append(
        Property(name="data", data_type=DataType.TEXT, index_filterable=False, index_searchable=False)
    )
    types_ = _datatypes()
    for spec in tier_attrs(tier).values():
        if spec.kind == "opaque" or spec.name in _AS_DIMENSION:
            continue
        if spec.kind == "text":
            props.append(exact(spec.prop))
        else:
            props.append(
                Property(
                    name=spec.prop,
                    data_type=types_[spec.kind],
                    index_filterable=True,
                    index_range_filters=spec.kind in ("number", "date"),
                )
            )
    return props


def edge_properties() -> list[Any]:
    from weaviate.classes.config import DataType, Property, Tokenization

    def exact(name: str) -> Any:
        return Property(
            name=name,
            data_type=DataType.TEXT,
            tokenization=Tokenization.FIELD,
            index_filterable=True,
            index_searchable=False,
        )

    return [
        exact("src"),
        exact("type"),
        exact("dst"),
        page_key(),
        Property(name="data", data_type=DataType.TEXT, index_filterable=False, index_searchable=False),
    ]


def meta_properties() -> list[Any]:
    from weaviate.classes.config import DataType, Property, Tokenization

    return [
        Property(
            name="key",
            data_type=DataType.TEXT,
            tokenization=Tokenization.FIELD,
            index_filterable=True,
            index_searchable=False,
        ),
        Property(
            name="kind",
            data_type=DataType.TEXT,
            tokenization=Tokenization.FIELD,
            index_filterable=True,
            index_searchable=False,
        ),
        Property(name="value", data_type=DataType.TEXT, index_filterable=False, index_searchable=False),
        page_key(),
    ]


def blob_properties() -> list[Any]:
    from weaviate.classes.config import DataType, Property, Tokenization

    return [
        Property(
            name="sha256",
            data_type=DataType.TEXT,
            tokenization=Tokenization.FIELD,
            index_filterable=True,
            index_searchable=False,
        ),
        Property(name="data", data_type=DataType.BLOB),
    ]


def vector_config(index: str) -> Any:
    """A self-provided named vector ``content`` with cosine distance (``hnsw``, ``flat`` or ``dynamic``)."""
    from weaviate.classes.config import Configure, VectorDistances

    vic: Any
    if index == "flat":
        vic = Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE)
    elif index == "dynamic":
        vic = Configure.VectorIndex.dynamic(
            hnsw=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE),
            flat=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE),
        )
    else:
        vic = Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)
    vectors = getattr(Configure, "Vectors", None)
    if vectors is not None and hasattr(vectors, "self_provided"):  # weaviate-client >= 4.16
        return vectors.self_provided(name=VECTOR_NAME, vector_index_config=vic)
    return Configure.NamedVectors.none(name=VECTOR_NAME, vector_index_config=vic)  # pragma: no cover


def inverted_index() -> Any:
    """Null state indexed (IsNull filters); stopwords off (the adapter drops them from queries)."""
    from weaviate.classes.config import Configure, StopwordsPreset

    return Configure.inverted_index(index_null_state=True, stopwords_preset=StopwordsPreset.NONE)


def multi_tenancy() -> Any:
    from weaviate.classes.config import Configure

    return Configure.multi_tenancy(enabled=True, auto_tenant_creation=True, auto_tenant_activation=True)
