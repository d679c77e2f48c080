"""The data of a forget job: what was asked (request), what it touches (plan), what it did (report).

A plan names nodes by id only (hashes of the agent and a key, never the forgotten words), so the
journal that holds it while the job runs carries no content of its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ...model.time import UtcDatetime, utcnow


class ForgetReport(BaseModel):
    """What a forget removed. ``about_messages`` counts the statements by others about a forgotten
    participant (included in ``messages``); ``nothing_to_do`` is set when nothing was left to forget
    (e.g. a participant forgotten before); ``resumed`` when the call completed an interrupted job."""

    messages: int = 0
    about_messages: int = 0
    observations: int = 0
    chunks: int = 0
    facts_closed: int = 0
    facts_updated: int = 0
    entities_dropped: int = 0
    episodes_dropped: int = 0
    topics_dropped: int = 0
    participants: int = 0
    sessions_rebuilt: list[str] = Field(default_factory=list)
    nothing_to_do: bool = False
    resumed: bool = False


class ForgetRequest(BaseModel):
    """The call a job carries out: ``targets`` are Message ids, or the one Participant id."""

    kind: Literal["messages", "participant"]
    targets: list[str]
    hard: bool
    about: bool = False


class Bridge(BaseModel):
    """A NEXT edge that re-links the turns on either side of deleted ones."""

    src: str
    dst: str
    gap_ms: int = 0


class ForgetPlan(BaseModel):
    """Every node a job removes or rewrites, computed once, before anything is changed.

    Hard: the listed nodes are deleted. Soft: they are replaced by redacted copies (names of the
    forgotten participant blanked too, ``scrub_people``). Either way the quoting chunks, summaries and
    topics are deleted (they are derived and rebuilt from what is left).
    """

    hard: bool
    delete_facts: bool = False
    #: Participants whose name is blanked on every redacted node naming them (soft forget).
    scrub_people: list[str] = Field(default_factory=list)
    #: The forgotten participant's person Entity (kept in their tombstone: the name is blanked).
    person_entity: str | None = None
    #: ``stable_hash`` of the names dropped from ``Session.participant_names``.
    name_keys: list[str] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    about_messages: list[str] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)
    chunks: list[str] = Field(default_factory=list)
    #: Session transcript / observation chunks quoting what is forgotten (rebuilt by the rebuild).
    quoting_chunks: list[str] = Field(default_factory=list)
    facts_lost: list[str] = Field(default_factory=list)
    facts_forced: list[str] = Field(default_factory=list)
    #: Facts that keep some support: their new observation count.
    facts_thinned: dict[str, int] = Field(default_factory=dict)
    entities: list[str] = Field(default_factory=list)
    episodes: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    #: Sessions whose summaries are dropped; ``rebuild``: those re-finalised afterwards.
    sessions: list[str] = Field(default_factory=list)
    rebuild: list[str] = Field(default_factory=list)
    named_sessions: list[str] = Field(default_factory=list)
    bridges: list[Bridge] = Field(default_factory=list)
    last_messages: dict[str, str | None] = Field(default_factory=dict)

    def removed(self) -> list[str]:
        """The nodes deleted (hard) or redacted (soft), in a stable order."""
        return [
            *self.messages,
            *self.observations,
            *self.chunks,
            *self.entities,
            *self.episodes,
            *self.participants,
        ]

    def is_empty(self) -> bool:
        return not (self.removed() or self.facts_lost or self.facts_thinned or self.topics)

    def report(self) -> ForgetReport:
        return ForgetReport(
            messages=len(self.messages),
            about_messages=len(self.about_messages),
            observations=len(self.observations),
            chunks=len(self.chunks),
            facts_closed=len(self.facts_lost),
            facts_updated=len(self.facts_thinned),
            entities_dropped=len(self.entities),
            episodes_dropped=len(self.episodes),
            topics_dropped=len(self.topics),
            participants=len(self.participants),
            nothing_to_do=self.is_empty(),
        )


class ForgetJob(BaseModel):
    """One entry of an agent's forget journal."""

    id: str
    request: ForgetRequest
    plan: ForgetPlan
    created_at: UtcDatetime = Field(default_factory=utcnow)
    #: When the job's stamp is used to close Facts (``valid_to``), so a resumed job closes them alike.
    stamp: UtcDatetime = Field(default_factory=utcnow)
