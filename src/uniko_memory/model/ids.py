"""Deterministic identities.

Every store derives the same id from the same normalised key, so replays are idempotent and the
embedded and Weaviate backends agree on identity. Ids include the agent (tenant), so no two agents
ever share a node id.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid

_WS = re.compile(r"\s+")
NAMESPACE = uuid.UUID("6f1c2a4e-9b7d-5e3f-8a21-0c4d5e6f7a8b")


def normalize_key(text: str) -> str:
    """Case-fold, NFKC-normalise and collapse whitespace: the form every identity key is hashed in."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def stable_hash(*parts: str, length: int = 32) -> str:
    """Hex digest of the parts joined by NUL, truncated to ``length`` characters."""
    h = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return h[:length]


def make_id(prefix: str, agent: str, *keys: str) -> str:
    """``prefix_<hash(agent, keys...)>``: the id form every node uses."""
    return f"{prefix}_{stable_hash(agent, *keys)}"


def to_uuid(node_id: str) -> uuid.UUID:
    """A UUID for backends that need one (Weaviate); uuid5 of the node id, stable across runs."""
    return uuid.uuid5(NAMESPACE, node_id)


def content_hash(data: bytes) -> str:
    """SHA-256 of raw bytes: the address of an artifact's content."""
    return hashlib.sha256(data).hexdigest()


def participant_id(agent: str, external_id: str) -> str:
    return make_id("par", agent, normalize_key(external_id))


def session_id(agent: str, external_id: str) -> str:
    return make_id("ses", agent, external_id)


def message_id(agent: str, external_id: str) -> str:
    return make_id("msg", agent, external_id)


def entity_id(agent: str, name: str, entity_type: str) -> str:
    """An Entity is identified by its normalised name and canonical type (upstream: lower(name)\\0type)."""
    return make_id("ent", agent, normalize_key(name), entity_type)


def chunk_id(agent: str, parent_id: str, chunk_type: str, index: int) -> str:
    return make_id("chk", agent, parent_id, chunk_type, str(index))
