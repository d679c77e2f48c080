"""Atomic ingest (P1 store + P2 NER): one store unit per call, whatever the number of turns.

Everything a query can see of a turn — the Message, its Session and Participants, the structural
edges, the Entities it mentions, and its Chunks when it is long — commits together or not at all.
The expensive derived work (observations, embeddings) runs afterwards, off this path.

Over 400 lines on purpose: ``AtomicIngest`` is one transaction (check, prepare, NER, ids, write)
whose steps share the prepared turns and the open unit; split apart, the unit's boundary would
have to be passed between modules and would be easier to break.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from pydantic import BaseModel, Field

from ..config import UnikoConfig
from ..errors import IdConflict, ValidationError
from ..model import (
    PUBLIC,
    Edge,
    EdgeType,
    Entity,
    Message,
    Participant,
    Session,
    Tier,
    entity_id,
    merged_visibility,
    message_id,
    participant_id,
    session_id,
    stable_hash,
)
from ..model.time import utcnow
from ..security import describe, scanner_for
from ..store.protocol import Store, UnitOfWork
from ..tokens import count_tokens
from .bulk import TURN_REFUSALS, BulkObserveResult
from .chunk_nodes import put_chunks
from .chunking import chunk_text, passage_spans
from .document import DocumentTurns
from .replay_settle import counts, resumable, settle, unfinished_error
from .turn import Turn, check_session_id, check_turn, turn_time

log = logging.getLogger(__name__)

_CONFLICT = "turn id {!r} was already stored with different content"


class StepTimings(BaseModel):
    """Milliseconds spent in each step of an ingest call."""

    validate_ms: float = 0.0
    ner_ms: float = 0.0
    commit_ms: float = 0.0
    total_ms: float = 0.0


class ObserveResult(BaseModel):
    """What one stored turn became."""

    message_id: str
    message_node_id: str
    session_node_id: str
    sender_node_id: str
    chunk_node_ids: list[str] = Field(default_factory=list)
    extracted_entities: list[str] = Field(default_factory=list)
    was_replay: bool = False
    #: Secrets masked in the turn's content and metadata before it was stored.
    secrets_redacted: int = 0
    timings: StepTimings | None = None


class UnitResult(BaseModel):
    results: list[ObserveResult]
    was_replay: bool
    timings: StepTimings


@dataclass
class PostIngestItem:
    """A committed message handed to post-ingest (P3 observations, P7a embeddings)."""

    agent: str
    message: Message
    speaker: str
    addressee: str | None
    analysis: Any = None
    entity_ids: dict[str, str] = field(default_factory=dict)  # canonical key -> entity node id
    participant_ids: dict[str, str] = field(default_factory=dict)  # canonical name -> participant id
    chunk_ids: list[str] = field(default_factory=list)
    #: A long turn is analysed per passage: the non-overlapping ``(start, end)`` spans of its text
    #: (``chunking.passage_spans`` of its chunks) and, kept from P2 for P3, one analysis each
    #: (``analysis`` stays None). Empty for a turn analysed whole. A document turn's are only the
    #: passages its NLP reads (``document.DocumentTurns.read_spans``); all of them are embedded.
    passage_spans: list[tuple[int, int]] = field(default_factory=list)
    passage_analyses: list[Any] = field(default_factory=list)


@dataclass
class _Prepared:
    turn: Turn
    ext_id: str
    node_id: str
    at: datetime
    redacted: int = 0
    analysis: Any = None
    entities: list[Any] = field(default_factory=list)
    chunks: list[Any] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    analyses: list[Any] = field(default_factory=list)


class _PrefetchedUnit:
    """A unit of work whose reads of known ids come from one batched read made when it opened.

    Store reads are a thread hop each (~0.3 ms); the write step of one turn used to make 5-9 of
    them. Ids in the batch are answered from it, and every node ``put`` through this wrapper
    replaces its entry, so reads still see this unit's own writes; other ids go to the unit.
    """

    def __init__(self, unit: UnitOfWork, found: dict[str, Any], fetched: set[str]) -> None:
        self.unit = unit
        self._found = found
        self._fetched = fetched

    @classmethod
    async def open(cls, store: Store, unit: UnitOfWork, ids: Sequence[str]) -> _PrefetchedUnit:
        # Nothing is written in the unit yet, and units run one at a time: the store's view is
        # the unit's view (``BufferedUnit.get`` reads the store for anything it did not write).
        found = await store.get_many(unit.agent, ids)
        return cls(unit, dict(found), set(ids))

    async def get(self, node_id: str) -> Any:
        if node_id in self._fetched:
            return self._found.get(node_id)
        return await self.unit.get(node_id)

    def put(self, node: Any) -> None:
        self.unit.put(node)
        self._found[node.id] = node
        self._fetched.add(node.id)

    def put_edge(self, edge: Edge) -> None:
        self.unit.put_edge(edge)


def derived_message_id(session_external: str, turn: Turn, at: datetime, position: int = 0) -> str:
    """A stable id for a turn given without one: replaying the same unit is a no-op, and two equal
    turns at the same instant in one unit (position differs) stay two turns."""
    return "t-" + stable_hash(
        session_external, turn.sender, at.isoformat(), turn.content, str(position), length=24
    )


def _key(name: str) -> str:
    from ..nlp.ner import canonical_key

    return canonical_key(name)


class AtomicIngest:
    """Runs P1 + P2 for one session's units against a store, with an NLP pipeline for NER."""

    def __init__(self, store: Store, config: UnikoConfig, nlp: Any) -> None:
        self.store = store
        self.config = config
        self.nlp = nlp

    async def ingest(
        self, agent: str, session_external: str, turns: Sequence[Turn]
    ) -> tuple[UnitResult, list[PostIngestItem]]:
        t0 = time.perf_counter()
        timings = StepTimings()
        prepared = self._validate(session_external, turns)
        self._check_session(session_external)
        assign_node_ids(agent, prepared)
        sid = session_id(agent, session_external)
        # One read for the replay check and the session (each store read is a thread hop).
        existing = await self.store.get_many(agent, [*(p.node_id for p in prepared), sid])
        replay = self._check_replay(prepared, existing)
        resume = replay and await self._unfinished(agent, sid, prepared, existing)
        timings.validate_ms = (time.perf_counter() - t0) * 1000
        if replay and not resume:
            results = [self._result(agent, sid, p, was_replay=True) for p in prepared]
            timings.total_ms = (time.perf_counter() - t0) * 1000
            return UnitResult(results=results, was_replay=True, timings=timings), []

        session = existing.get(sid)
        names = self._participant_names(session if isinstance(session, Session) else None, prepared, [])
        t1 = time.perf_counter()
        await asyncio.to_thread(self._extract, prepared, names)
        timings.ner_ms = (time.perf_counter() - t1) * 1000

        t2 = time.perf_counter()
        items = await self._commit(agent, sid, session_external, prepared, session, names, resume)
        if items is None:  # another writer stored these turns meanwhile: its unit may be unfinished
            existing = await self.store.get_many(agent, [*(p.node_id for p in prepared), sid])
            if self._check_replay(prepared, existing) and await self._unfinished(
                agent, sid, prepared, existing
            ):
                session = existing.get(sid)
                items = await self._commit(agent, sid, session_external, prepared, session, names, True)
        timings.commit_ms = (time.perf_counter() - t2) * 1000
        timings.total_ms = (time.perf_counter() - t0) * 1000
        if items is None:
            results = [self._result(agent, sid, p, was_replay=True) for p in prepared]
            return UnitResult(results=results, was_replay=True, timings=timings), []
        results = [
            self._result(agent, sid, p, chunk_ids=it.chunk_ids) for p, it in zip(prepared, items, strict=True)
        ]
        return UnitResult(results=results, was_replay=False, timings=timings), items

    async def ingest_window(
        self, agent: str, session_external: str, turns: Sequence[Any], first_position: int = 0
    ) -> tuple[BulkObserveResult, list[PostIngestItem]]:
        """An import's window of turns: each checked as its own unit (the same id, refusal and
        replay as a single ``ingest``), then one NLP pass and one transaction for those to store.

        A refusal or a replay is about its turn only. If another writer stores some of these
        turns between the check and the write, the window falls back to one unit per turn.
        """
        out = BulkObserveResult()
        self._check_session(session_external)
        sid = session_id(agent, session_external)
        fresh: dict[str, tuple[int, _Prepared]] = {}
        for offset, turn in enumerate(turns):
            position = first_position + offset
            try:
                (p,) = self._validate(session_external, [turn])
            except TURN_REFUSALS as exc:
                out.refuse(position, turn, exc)
                continue
            assign_node_ids(agent, [p])
            seen = fresh.get(p.node_id)
            if seen is not None:  # the same turn twice in the window: as two single ingests
                first = seen[1].turn
                if first.content == p.turn.content and first.display_name == p.turn.display_name:
                    out.replays += 1
                else:
                    out.refuse(position, turn, IdConflict(_CONFLICT.format(p.ext_id)))
                continue
            fresh[p.node_id] = (position, p)
        if not fresh:
            return out, []
        existing = await self.store.get_many(agent, [*fresh, sid])
        todo: list[tuple[int, _Prepared]] = []
        unfinished = False  # a turn stored by a unit another writer is still writing
        for position, p in fresh.values():
            try:
                replay = self._check_replay([p], existing)
            except IdConflict as exc:
                out.refuse(position, p.turn, exc)
                continue
            if replay and counts(existing.get(sid), [cast(Message, existing[p.node_id])]):
                out.replays += 1
            else:
                unfinished |= replay
                todo.append((position, p))
        if not todo:
            return out, []
        if unfinished:  # each turn as ``observe`` settles it: wait for that unit, or resume it
            return await self._one_by_one(agent, session_external, todo, out)
        prepared = [p for _, p in todo]
        session = existing.get(sid)
        names = self._participant_names(session if isinstance(session, Session) else None, prepared, [])
        await asyncio.to_thread(self._extract, prepared, names)
        try:
            items = await self._commit(agent, sid, session_external, prepared, session, names)
        except IdConflict:
            items = None
        if items is not None:
            out.stored += len(items)
            return out, items
        # Raced by another writer: settle each turn on its own, as ``observe`` would.
        return await self._one_by_one(agent, session_external, todo, out)

    async def _one_by_one(
        self, agent: str, session_external: str, todo: list[tuple[int, _Prepared]], out: BulkObserveResult
    ) -> tuple[BulkObserveResult, list[PostIngestItem]]:
        all_items: list[PostIngestItem] = []
        for position, p in todo:
            try:
                result, got = await self.ingest(agent, session_external, [p.turn])
            except TURN_REFUSALS as exc:
                out.refuse(position, p.turn, exc)
                continue
            out.replays += result.was_replay
            out.stored += not result.was_replay
            all_items.extend(got)
        return out, all_items

    async def _commit(
        self,
        agent: str,
        sid: str,
        session_external: str,
        prepared: list[_Prepared],
        session: Any,
        names: list[str],
        resume: bool = False,
    ) -> list[PostIngestItem] | None:
        """The write step: one store unit for the prepared turns; None if a concurrent identical
        unit committed them meanwhile (a replay). ``resume``: the turns are stored by a unit that
        never finished (``replay_settle``); apply it again unless it has finished meanwhile."""
        items: list[PostIngestItem] = []
        async with self.store.unit(agent) as unit:
            u = await _PrefetchedUnit.open(self.store, unit, self._reads(agent, sid, prepared, session))
            # Re-read under the unit: a concurrent identical unit may have committed meanwhile.
            raced = {p.node_id: n for p in prepared if (n := await u.get(p.node_id)) is not None}
            current = await u.get(sid)
            if raced and self._check_replay(prepared, raced):
                stored = [m for p in prepared if isinstance(m := raced[p.node_id], Message)]
                if not resume or counts(current, stored):
                    return None
                if not resumable(current, stored):
                    raise unfinished_error(sid, stored, current)
            before = current if isinstance(current, Session) else None
            names = self._participant_names(before, prepared, names)
            self._upsert_session(u, agent, sid, session_external, before, prepared, names)
            pids = await self._upsert_participants(u, agent, sid, prepared)
            prev_id = before.last_message_id if before else None
            prev = await u.get(prev_id) if prev_id else None
            prev_at = prev.timestamp if isinstance(prev, Message) else None
            seq0 = before.message_count if before else 0
            for i, p in enumerate(prepared):
                item = await self._write_turn(u, agent, sid, p, seq0 + i, pids)
                if prev_id is not None:
                    gap = int((p.at - prev_at).total_seconds() * 1000) if prev_at else 0
                    props: dict[str, Any] = {"gap_ms": max(0, gap)}
                    if gap < 0:
                        props["out_of_order"] = True
                    u.put_edge(Edge(type=EdgeType.NEXT, src=prev_id, dst=p.node_id, props=props))
                prev_id, prev_at = p.node_id, p.at
                items.append(item)
        return items

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _reads(agent: str, sid: str, prepared: list[_Prepared], session: Any) -> list[str]:
        """Every node the write step reads: the turns (race check), the session, the previous
        message (as last seen), the participants and the mentioned entities."""
        ids = [p.node_id for p in prepared] + [sid]
        if isinstance(session, Session) and session.last_message_id:
            ids.append(session.last_message_id)
        for p in prepared:
            ids.append(participant_id(agent, p.turn.sender))
            ids.extend(participant_id(agent, a) for a in p.turn.addressed_to)
            ids.extend(entity_id(agent, e.name, e.entity_type) for e in p.entities)
        return list(dict.fromkeys(ids))

    def _validate(self, session_external: str, turns: Sequence[Turn]) -> list[_Prepared]:
        check_session_id(session_external)
        if not turns:
            raise ValidationError("a unit needs at least one turn")
        limits = self.config.ingest
        if len(turns) > limits.max_unit_turns:
            raise ValidationError(
                f"the unit has {len(turns):,} turns, over the limit of {limits.max_unit_turns:,} "
                "(IngestConfig.max_unit_turns); commit it as several units"
            )
        now = utcnow()
        out: list[_Prepared] = []
        seen: set[str] = set()
        for i, turn in enumerate(turns):
            if not isinstance(turn, Turn):
                raise ValidationError(f"turn {i} is a {type(turn).__name__}, expected Turn")
            check_turn(
                turn,
                limits.max_turn_chars,
                i,
                max_metadata_bytes=limits.max_metadata_bytes,
                max_addressed_to=limits.max_addressed_to,
            )
            turn, redacted = self._redact(turn)
            at = turn_time(turn, now)
            ext = turn.id or derived_message_id(session_external, turn, at, i)
            if ext in seen:
                raise ValidationError(f"turn id {ext!r} appears twice in one unit")
            seen.add(ext)
            out.append(_Prepared(turn=turn, ext_id=ext, node_id="", at=at, redacted=redacted))
        return out

    def _redact(self, turn: Turn) -> tuple[Turn, int]:
        """Mask secrets first, so ids, NER, chunks, embeddings and replay checks see only the masked
        text (a replay of the same raw turn masks to the same content and stays a no-op).

        Every stored string is scanned. Free text (content, ``sender_name``, ``category``,
        ``content_type``, metadata keys and values) is masked in place; an identity (the turn id,
        ``sender``, ``addressed_to``, ``visibility``) that holds a secret is refused with a
        ``ValidationError``, since masking it would make it another turn or participant."""
        if not self.config.ingest.redact_secrets:
            return turn, 0
        scanner = scanner_for(tuple(self.config.ingest.secret_patterns_extra))
        scanner.check_ids({"id": turn.id}, "a turn")
        ids = {"sender": turn.sender, "visibility": turn.visibility}
        ids.update({f"addressed_to[{k}]": a for k, a in enumerate(turn.addressed_to)})
        scanner.check_ids(ids, f"turn {turn.id!r}" if turn.id else "a turn")
        update: dict[str, Any] = {}
        metadata, counts = scanner.redact_data(turn.metadata)
        if counts:
            update["metadata"] = metadata
        for name in ("content", "sender_name", "category", "content_type"):
            masked = scanner.redact_optional(getattr(turn, name))
            if masked is not None and masked.changed:
                update[name] = masked.text
                counts += masked.counts
        if not counts:
            return turn, 0
        log.info("masked %d secret(s) in a turn before storing it: %s", counts.total(), describe(counts))
        return turn.model_copy(update=update), counts.total()

    def _check_session(self, session_external: str) -> None:
        """A session id holding a secret is refused, as a turn id is (``_redact``)."""
        if self.config.ingest.redact_secrets:
            scanner = scanner_for(tuple(self.config.ingest.secret_patterns_extra))
            scanner.check_ids({"session id": session_external}, "the unit")

    async def _unfinished(
        self, agent: str, sid: str, prepared: list[_Prepared], existing: dict[str, Any]
    ) -> bool:
        """For stored turns (a replay): False once their unit has finished, waiting for another
        writer still writing it; True if it never finishes and can be applied again (``existing``
        then holds the Session read last). Raises ``StoreError`` if it can be neither."""
        stored = [m for p in prepared if isinstance(m := existing[p.node_id], Message)]
        wait = self.config.ingest.replay_settle_secs
        session = await settle(self.store, agent, sid, stored, existing.get(sid), wait)
        if session is not None:
            existing[sid] = session
        if counts(session, stored):
            return False
        if not resumable(session, stored):
            raise unfinished_error(sid, stored, session)
        log.warning(
            "turn(s) %s of session %r were stored by a unit that did not finish within %.1f s (a "
            "writer stopped part way); applying it again",
            ", ".join(repr(p.ext_id) for p in prepared),
            sid,
            wait,
        )
        return True

    def _check_replay(self, prepared: list[_Prepared], existing: dict[str, Any]) -> bool:
        # node ids need the agent, which the caller's store unit fixes; computed here
        hits = 0
        for p in prepared:
            node = existing.get(p.node_id)
            if node is None:
                continue
            hits += 1
            if (
                not isinstance(node, Message)
                or node.content != p.turn.content
                or node.sender_name != (p.turn.display_name)
            ):
                raise IdConflict(_CONFLICT.format(p.ext_id))
        if hits and hits != len(prepared):
            raise IdConflict("the unit partially replays stored turns; replay the whole unit or use new ids")
        return hits == len(prepared)

    def _participant_names(
        self, session: Session | None, prepared: list[_Prepared], extra: list[str]
    ) -> list[str]:
        names = list(session.participant_names) if session is not None else []
        names += [n for n in extra if n not in names]
        for p in prepared:
            for n in (p.turn.display_name, *p.turn.addressed_to):
                if n not in names:
                    names.append(n)
        return names

    def _extract(self, prepared: list[_Prepared], names: list[str]) -> None:
        """P2: one NLP pass over the unit's texts, then the NER cascade per turn (CPU, no store).

        A turn over ``ChunkingConfig.message_chunk_threshold`` tokens is split into passages (its
        chunks) and analysed per passage (``chunking.passage_spans``: no text twice), so time and
        memory stay linear in its length; its entities are the passages' mentions, merged.
        A document turn (over ``IngestConfig.document_turn_chars`` characters) always has
        passages, and only those in its first ``document_turn_chars`` characters are analysed
        (``document.py``): past that length NLP costs nothing more, as for an artifact.
        The pass is shallow when the pipeline offers it (no dependency parse or lemmas, which NER
        does not use); P3 completes the kept analyses off this path (``NlpPipeline.complete``).
        """
        from ..nlp.ner import deduplicate, extract

        cfg = self.config.chunking
        documents = DocumentTurns.of(self.config.ingest)
        texts: list[str] = []
        for p in prepared:
            content = p.turn.content
            if documents.is_document(content) or count_tokens(content) > cfg.message_chunk_threshold:
                p.chunks = chunk_text(
                    content,
                    max_tokens=cfg.max_chunk_tokens,
                    min_tokens=cfg.min_chunk_tokens,
                    overlap=cfg.overlap(),
                )
                p.spans = documents.read_spans(content, passage_spans(p.chunks))
                texts.extend(content[a:b] for a, b in p.spans)
            else:
                texts.append(content)
        analyze = getattr(self.nlp, "analyze_shallow", None) or self.nlp.analyze
        analyses = iter(analyze(texts))
        strict = self.config.nlp.entity_strict_admission
        for p in prepared:
            if not p.spans:
                p.analysis = next(analyses)
                p.entities = extract(p.analysis, names, reference=p.at, strict=strict).entities
                continue
            p.analyses = [next(analyses) for _ in p.spans]
            mentions = [
                m for a in p.analyses for m in extract(a, names, reference=p.at, strict=strict).mentions
            ]
            p.entities = deduplicate(mentions)

    def _upsert_session(
        self,
        u: _PrefetchedUnit,
        agent: str,
        sid: str,
        external: str,
        current: Session | None,
        prepared: list[_Prepared],
        names: list[str],
    ) -> None:
        latest = max(p.at for p in prepared)
        earliest = min(p.at for p in prepared)
        if current is not None:
            session = current.model_copy(
                update={
                    "last_activity_at": max(current.last_activity_at, latest),
                    "started_at": min(current.started_at, earliest),
                    "message_count": current.message_count + len(prepared),
                    "last_message_id": prepared[-1].node_id,
                    "participant_names": names,
                    "ended_at": None,
                }
            )
        else:
            session = Session(
                id=sid,
                agent=agent,
                external_id=external,
                started_at=earliest,
                last_activity_at=latest,
                message_count=len(prepared),
                last_message_id=prepared[-1].node_id,
                participant_names=names,
            )
        u.put(session)

    async def _upsert_participants(
        self, u: _PrefetchedUnit, agent: str, sid: str, prepared: list[_Prepared]
    ) -> dict[str, str]:
        pids: dict[str, str] = {}
        for p in prepared:
            for ext, name in ((p.turn.sender, p.turn.display_name), *((a, a) for a in p.turn.addressed_to)):
                if ext in pids:
                    continue
                pid = participant_id(agent, ext)
                pids[ext] = pid
                if await u.get(pid) is None:
                    u.put(Participant(id=pid, agent=agent, external_id=ext, name=name))
                u.put_edge(Edge(type=EdgeType.PARTICIPATED_IN, src=pid, dst=sid))
        return pids

    async def _write_turn(
        self, u: _PrefetchedUnit, agent: str, sid: str, p: _Prepared, seq: int, pids: dict[str, str]
    ) -> PostIngestItem:
        t = p.turn
        msg = Message(
            id=p.node_id,
            agent=agent,
            external_id=p.ext_id,
            session_id=sid,
            sender_id=pids[t.sender],
            sender_name=t.display_name,
            addressed_to=[pids[a] for a in t.addressed_to],
            content=t.content,
            timestamp=p.at,
            seq=seq,
            content_type=t.content_type,
            category=t.category,
            metadata=t.metadata,
            visibility=t.visibility,
        )
        u.put(msg)
        u.put_edge(Edge(type=EdgeType.IN_SESSION, src=msg.id, dst=sid))
        u.put_edge(Edge(type=EdgeType.SENT_BY, src=msg.id, dst=msg.sender_id, props={"role": "sender"}))
        for pid in msg.addressed_to:
            u.put_edge(Edge(type=EdgeType.ADDRESSED_TO, src=msg.id, dst=pid))
        entity_ids: dict[str, str] = {}
        for ent in p.entities:
            eid = entity_id(agent, ent.name, ent.entity_type)
            entity_ids[ent.key] = eid
            current = await u.get(eid)
            if isinstance(current, Entity):
                node = current.model_copy(
                    update={
                        "frequency": current.frequency + ent.count,
                        "first_seen": min(current.first_seen, p.at),
                        "last_seen": max(current.last_seen, p.at),
                        "confidence": max(current.confidence, ent.confidence),
                        # A name said only in private turns stays as private as they are.
                        "visibility": merged_visibility(current.visibility, t.visibility),
                    }
                )
            else:
                node = Entity(
                    id=eid,
                    agent=agent,
                    name=ent.name,
                    entity_type=ent.entity_type,
                    first_seen=p.at,
                    last_seen=p.at,
                    frequency=ent.count,
                    confidence=ent.confidence,
                    visibility=t.visibility or PUBLIC,  # a name is as private as the turn naming it
                )
            u.put(node)
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=msg.id, dst=eid, props={"count": ent.count}))
        chunk_ids = put_chunks(
            u,
            agent=agent,
            parent_id=msg.id,
            parent_tier=Tier.MESSAGE,
            chunk_type="message",
            chunks=[(c, {"speaker": t.display_name}) for c in p.chunks],
            session_id=sid,
            at=p.at,
            visibility=msg.visibility,
            covered_ids=[msg.id],
        )
        names = {_key(t.display_name): pids[t.sender], **{_key(a): pids[a] for a in t.addressed_to}}
        return PostIngestItem(
            agent=agent,
            message=msg,
            speaker=t.display_name,
            addressee=t.addressed_to[0] if t.addressed_to else None,
            analysis=p.analysis,
            entity_ids=entity_ids,
            participant_ids=names,
            chunk_ids=chunk_ids,
            passage_spans=list(p.spans),
            passage_analyses=list(p.analyses),
        )

    def _result(
        self,
        agent: str,
        sid: str,
        p: _Prepared,
        *,
        was_replay: bool = False,
        chunk_ids: list[str] | None = None,
    ) -> ObserveResult:
        return ObserveResult(
            message_id=p.ext_id,
            message_node_id=p.node_id,
            session_node_id=sid,
            sender_node_id=participant_id(agent, p.turn.sender),
            chunk_node_ids=chunk_ids or [],
            extracted_entities=[e.name for e in p.entities],
            was_replay=was_replay,
            secrets_redacted=p.redacted,
        )


def assign_node_ids(agent: str, prepared: list[_Prepared]) -> None:
    for p in prepared:
        p.node_id = message_id(agent, p.ext_id)
