"""Typed graph edges. Every derived node keeps provenance edges back to the Messages it came from."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EdgeType(StrEnum):
    MENTIONS = "MENTIONS"  # Message|Chunk|Episode -> Entity {count}
    IN_SESSION = "IN_SESSION"  # Message -> Session
    NEXT = "NEXT"  # Message -> Message {gap_ms}
    SENT_BY = "SENT_BY"  # Message -> Participant {role}
    ADDRESSED_TO = "ADDRESSED_TO"  # Message -> Participant
    PARTICIPATED_IN = "PARTICIPATED_IN"  # Participant -> Session
    OBSERVED_IN = "OBSERVED_IN"  # Observation -> Message|Chunk
    ABOUT = "ABOUT"  # Observation|Fact|Chunk -> Entity|Participant
    SUPPORTED_BY = "SUPPORTED_BY"  # Fact -> Observation {weight}
    INVALIDATES = "INVALIDATES"  # Fact -> Fact {reason, invalidated_at}
    #: The old value's Fact -> the Fact that replaced it (consolidation.supersede).
    SUPERSEDED_BY = "SUPERSEDED_BY"  # Fact -> Fact {at, reason}
    BELONGS_TO = "BELONGS_TO"  # Entity|Fact -> Topic
    HAS_CHUNK = "HAS_CHUNK"  # Message|Session|Artifact -> Chunk {index}
    HAS_CONTENT = "HAS_CONTENT"  # Artifact -> content blob {sha256}
    ATTACHED_TO = "ATTACHED_TO"  # Artifact -> Message|Session
    RECORDED_BY = "RECORDED_BY"  # Episode -> Participant
    FOLLOWED_BY = "FOLLOWED_BY"  # Episode -> Episode {gap_ms}
    INVOLVES = "INVOLVES"  # Episode -> node
    SUMMARIZES = "SUMMARIZES"  # Summary -> Session
    MEMBER_OF = "MEMBER_OF"  # Participant -> team/org
    PROCESSED = "PROCESSED"  # ConsolidationCycle -> Observation (idempotency anchor)
    CREATED = "CREATED"  # ConsolidationCycle -> Fact
    REINFORCED = "REINFORCED"  # ConsolidationCycle -> Fact
    INVALIDATED = "INVALIDATED"  # ConsolidationCycle -> Fact
    INVOLVED = "INVOLVED"  # ConsolidationCycle -> Entity
    PROMOTED = "PROMOTED"  # Procedure -> Episode
    #: A later turn said this Observation again; not a source (recall cites only OBSERVED_IN).
    RESTATED_IN = "RESTATED_IN"  # Observation -> Message


class Direction(StrEnum):
    OUT = "out"
    IN = "in"
    BOTH = "both"


class Edge(BaseModel):
    """A directed, typed edge with properties; (type, src, dst) is its identity within an agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: EdgeType
    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    props: dict[str, Any] = Field(default_factory=dict)

    def key(self) -> tuple[str, str, str]:
        return (self.type.value, self.src, self.dst)
