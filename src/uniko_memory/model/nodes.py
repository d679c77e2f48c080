"""The tier data model: one typed pydantic node per tier of the uniko design.

Nodes are plain data. A store persists them generically through three hooks each class declares:
``search_text()`` (what BM25 and the embedder see), and the ``*_field`` class variables naming which
attribute anchors the session, participant and time dimensions that filters push down.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .statement import tensed_statement
from .time import UtcDatetime, utcnow
from .visibility import is_well_formed


class Tier(StrEnum):
    PARTICIPANT = "participant"
    SESSION = "session"
    MESSAGE = "message"
    ENTITY = "entity"
    OBSERVATION = "observation"
    FACT = "fact"
    PROCEDURE = "procedure"
    TOPIC = "topic"
    EPISODE = "episode"
    CHUNK = "chunk"
    ARTIFACT = "artifact"
    SUMMARY = "summary"
    CONSOLIDATION_CYCLE = "consolidation_cycle"
    DEAD_LETTER = "dead_letter"


class Node(BaseModel):
    """Fields every node carries: identity, tenant, visibility, redaction."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    tier: ClassVar[Tier]
    session_field: ClassVar[str | None] = None
    participant_field: ClassVar[str | None] = None
    time_field: ClassVar[str | None] = "created_at"
    #: Attributes holding user content; redaction blanks them (GDPR) and keeps the node's shape.
    content_fields: ClassVar[tuple[str, ...]] = ()

    id: str = Field(min_length=1, max_length=256)
    agent: str = Field(min_length=1, max_length=256)
    visibility: str = "public"
    redacted: bool = False
    created_at: UtcDatetime = Field(default_factory=utcnow)

    @field_validator("visibility")
    @classmethod
    def _visibility_is_a_string(cls, v: str) -> str:
        # Unknown schemes are stored as given: they admit nobody (fail closed), never everybody.
        return v.strip()

    def search_text(self) -> str | None:
        """Text indexed for BM25 and embedded for vector search; None means not searchable."""
        return None

    @property
    def visibility_well_formed(self) -> bool:
        return is_well_formed(self.visibility)

    def session_key(self) -> str | None:
        return getattr(self, self.session_field) if self.session_field else None

    def participant_key(self) -> str | None:
        return getattr(self, self.participant_field) if self.participant_field else None

    def time_key(self) -> Any:
        return getattr(self, self.time_field) if self.time_field else None

    def redacted_copy(self) -> Node:
        """A copy with every content field blanked and ``redacted`` set."""
        blank: dict[str, Any] = {"redacted": True}
        for name in self.content_fields:
            current = getattr(self, name)
            if isinstance(current, dict):
                blank[name] = {}
            elif isinstance(current, list):
                blank[name] = []
            elif current is None:
                continue
            else:
                blank[name] = ""
        return self.model_copy(update=blank)


class Participant(Node):
    tier = Tier.PARTICIPANT
    content_fields = ("metadata",)
    participant_field = "id"
    external_id: str
    name: str
    kind: Literal["human", "agent", "system", "unknown"] = "unknown"
    metadata: dict[str, Any] = Field(default_factory=dict)

    def search_text(self) -> str | None:
        return self.name


class Session(Node):
    tier = Tier.SESSION
    session_field = "id"
    time_field = "started_at"
    external_id: str
    started_at: UtcDatetime
    last_activity_at: UtcDatetime
    ended_at: UtcDatetime | None = None
    topic: str | None = None
    message_count: int = 0
    last_message_id: str | None = None
    participant_names: list[str] = Field(default_factory=list)
    finalized_at: UtcDatetime | None = None
    finalized_message_count: int = 0


class Message(Node):
    tier = Tier.MESSAGE
    content_fields = ("content", "metadata")
    session_field = "session_id"
    participant_field = "sender_id"
    time_field = "timestamp"
    external_id: str
    session_id: str
    sender_id: str
    sender_name: str
    addressed_to: list[str] = Field(default_factory=list)
    content: str
    timestamp: UtcDatetime
    seq: int = 0
    post_ingest_done: bool = False
    content_type: str = "text"
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def search_text(self) -> str | None:
        # The speaker's name is indexed with the words: questions name people ("What did Caroline ...").
        return None if self.redacted else f"{self.sender_name}: {self.content}"


class Entity(Node):
    tier = Tier.ENTITY
    time_field = "last_seen"
    name: str
    entity_type: str
    first_seen: UtcDatetime
    last_seen: UtcDatetime
    frequency: int = 0
    confidence: float = 0.0
    invalidation_count: int = 0
    last_invalidation_at: UtcDatetime | None = None
    unstable: bool = False

    def search_text(self) -> str | None:
        return f"{self.name} ({self.entity_type})"


class Observation(Node):
    tier = Tier.OBSERVATION
    #: The triple's subject and predicate are the turn's words too: a redacted copy keeps none.
    content_fields = ("content", "subject", "predicate", "object", "temporal_phrase")
    session_field = "session_id"
    participant_field = "speaker_id"
    time_field = "observed_at"
    content: str
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    temporal_phrase: str | None = None
    anchor_lo: UtcDatetime | None = None
    anchor_hi: UtcDatetime | None = None
    anchor_granularity: str | None = None
    observed_at: UtcDatetime
    confidence: float = 0.5
    message_id: str | None = None
    session_id: str | None = None
    speaker_id: str | None = None
    extractor: str = "rules"
    #: When a newer statement replaced what this one says (consolidation's supersession: "lives in
    #: Paris" after "moved to Lyon"), and the Fact that holds the new value. Recall marks it.
    superseded_at: UtcDatetime | None = None
    superseded_by: str | None = None
    #: Later turns that said this again (write-time near-duplicates, ``IngestConfig``): each has a
    #: RESTATED_IN edge. They are not its sources: its words and ``message_id`` stay the first turn's.
    restatements: int = 0

    def search_text(self) -> str | None:
        return None if self.redacted else self.content


#: ``Fact.source_rule`` of a compiled list (``consolidation.lists``).
LIST_SOURCE_RULE = "compiled list"


class Fact(Node):
    tier = Tier.FACT
    #: Every word of the statement (and its normalised subject): a redacted Fact keeps none of them.
    content_fields = (
        "subject",
        "predicate",
        "object",
        "subject_key",
        "text",
        "slot",
        "slot_value",
        "slot_event",
    )
    time_field = "valid_from"
    subject: str
    predicate: str
    object: str
    confidence: float = 0.5
    observation_count: int = 1
    valid_from: UtcDatetime
    valid_to: UtcDatetime | None = None  # half-open [valid_from, valid_to); None = still valid
    certainty: Literal["approximate", "definite"] = "approximate"
    source_rule: str = "consolidation"
    invalidation_reason: str | None = None
    invalidated_at: UtcDatetime | None = None
    category: str | None = None
    #: Normalised subject (the consolidation group key); None on Facts written before it existed.
    subject_key: str | None = None
    #: The sentence a prompt sees: the first supporting Observation's text (the speaker's words in the
    #: third person, dates resolved). The triple stays structured data for consolidation. None on Facts
    #: written before it existed, or when that Observation was forgotten: then a tensed template.
    text: str | None = None
    #: The Observation ``text`` was taken from (forgetting it drops the sentence).
    text_source: str | None = None
    #: What ``valid_from`` is: the time of the event the statement dates ("yesterday" -> that day), or
    #: the time it was said when the statement carries no date (then nothing earlier is claimed).
    time_basis: Literal["event", "said"] = "said"
    #: The attribute this Fact gives a value to, "<attribute>/<subject>" ("residence/maya",
    #: "date/visit"; ``consolidation.slots``): a newer different value in the same slot supersedes
    #: it. None when no slot rule read the statement.
    slot: str | None = None
    #: The value's normalised key ("lyon", "2024-07-19/day", "cancelled").
    slot_value: str | None = None
    #: For an event's date: "owner|detail" ("leo|", "|rome"), which tells events of one kind apart.
    slot_event: str | None = None
    #: The Fact that replaced this one (a SUPERSEDED_BY edge too); ``valid_to`` is when.
    superseded_by: str | None = None

    def statement(self) -> str:
        """A readable sentence: ``text`` when present, else the triple in a tensed template."""
        if self.text:
            return self.text
        return tensed_statement(self.subject, self.predicate, self.object)

    def triple_text(self) -> str:
        """The triple in a tensed template: what search matches (subject, relation, value), without
        the attribution and asides a turn's sentence carries. A compiled list's triple is not a
        sentence ("Melanie", "list_activity", "camping, pottery"): its line is."""
        if self.source_rule == LIST_SOURCE_RULE and self.text:
            return self.text
        return tensed_statement(self.subject, self.predicate, self.object)

    def search_text(self) -> str | None:
        return None if self.redacted else self.triple_text()


class Procedure(Node):
    tier = Tier.PROCEDURE
    content_fields = ("description",)
    name: str
    description: str = ""
    precondition_rule: str = ""
    action_a: str = ""
    action_b: str = ""
    effectiveness: float = 1.0
    use_count: int = 0
    success_count: int = 0
    failure_count: int = 0
    status: Literal["candidate", "active", "deprecated"] = "candidate"
    last_used_at: UtcDatetime | None = None
    settings: dict[str, Any] = Field(default_factory=dict)

    def search_text(self) -> str | None:
        return f"{self.name} {self.description}".strip()


class Topic(Node):
    tier = Tier.TOPIC
    content_fields = ("summary",)
    name: str
    summary: str = ""
    entity_count: int = 0
    fact_count: int = 0
    retired_at: UtcDatetime | None = None

    def search_text(self) -> str | None:
        return f"{self.name}. {self.summary}".strip()


class Episode(Node):
    tier = Tier.EPISODE
    content_fields = ("state",)
    participant_field = "participant_id"
    time_field = "timestamp"
    action_type: str
    outcome: str | None = None
    importance: float = 0.5
    timestamp: UtcDatetime
    participant_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)

    def search_text(self) -> str | None:
        topic = self.state.get("topic") or self.state.get("question")
        return f"{self.action_type}: {topic}" if topic else self.action_type


class Chunk(Node):
    tier = Tier.CHUNK
    content_fields = ("text", "heading", "metadata")
    session_field = "session_id"
    time_field = "start_time"
    parent_id: str
    parent_tier: Tier
    chunk_type: Literal["message", "session", "observation", "artifact", "page"]
    index: int = Field(ge=0)
    text: str
    start: int = 0
    end: int = 0
    token_count: int = 0
    heading: str | None = None
    session_id: str | None = None
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    covered_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def search_text(self) -> str | None:
        return None if self.redacted else self.text


class Artifact(Node):
    tier = Tier.ARTIFACT
    content_fields = ("title", "source_path")
    session_field = "session_id"
    external_id: str
    title: str = ""
    mime_type: str = "text/plain"
    sha256: str
    size: int = 0
    source_path: str | None = None
    session_id: str | None = None
    extraction_failed: bool = False
    extraction_error: str | None = None
    page_count: int | None = None

    def search_text(self) -> str | None:
        return self.title or None


class Summary(Node):
    tier = Tier.SUMMARY
    content_fields = ("text",)
    session_field = "session_id"
    session_id: str | None = None
    text: str
    method: Literal["extractive", "abstractive"] = "extractive"

    def search_text(self) -> str | None:
        return None if self.redacted else self.text


class ConsolidationCycle(Node):
    tier = Tier.CONSOLIDATION_CYCLE
    time_field = "started_at"
    started_at: UtcDatetime
    finished_at: UtcDatetime | None = None
    observations_processed: int = 0
    facts_created: int = 0
    facts_reinforced: int = 0
    facts_invalidated: int = 0
    drift_alerts: int = 0


class DeadLetter(Node):
    tier = Tier.DEAD_LETTER
    content_fields = ("payload",)
    step: str
    error: str
    node_ref: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    retry_count: int = 0
    max_retries: int = 3
    next_retry_at: UtcDatetime | None = None
    status: Literal["pending", "retrying", "resolved", "exhausted"] = "pending"


NODE_TYPES: dict[Tier, type[Node]] = {
    cls.tier: cls
    for cls in (
        Participant,
        Session,
        Message,
        Entity,
        Observation,
        Fact,
        Procedure,
        Topic,
        Episode,
        Chunk,
        Artifact,
        Summary,
        ConsolidationCycle,
        DeadLetter,
    )
}


#: The same table keyed by the tier's name (``Tier`` members hash by member name, not value): a
#: store decodes every row it reads through ``node_class``, ~200 a recall.
_BY_NAME: dict[str, type[Node]] = {t.value: cls for t, cls in NODE_TYPES.items()}


def node_class(tier: Tier | str) -> type[Node]:
    """The class for a tier name; unknown names raise ``UnknownTier``."""
    found = _BY_NAME.get(tier.value if isinstance(tier, Tier) else tier) if isinstance(tier, str) else None
    if found is not None:
        return found
    from ..errors import UnknownTier

    try:
        return NODE_TYPES[Tier(tier)]
    except (ValueError, KeyError):
        raise UnknownTier(f"unknown tier {tier!r}; known tiers: {', '.join(t.value for t in Tier)}") from None
