"""``Agent``: one tenant's memory — its sessions, recall and answers, consolidation, forgetting.

Every verb is a thin call into the engine (``recall``, ``query``, ``pipeline.Cycles``,
``pipeline.Forgetting``) on the engine's loop; each has a ``*_sync`` twin.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import UnikoConfig, WakeupConfig
from ..consolidation import CycleStats
from ..consolidation.forget import ForgetReport
from ..cortex import SweepReport, match_procedures, record_procedure_use
from ..errors import ValidationError
from ..ingest.artifacts import ArtifactIngest, ArtifactReport, ArtifactSource
from ..ingest.finalize import FinalizeReport
from ..integrity import AuditConfig, AuditReport, audit
from ..model import Episode, Node, Procedure, Tier, Viewer
from ..model import Session as SessionNode
from ..model.time import utcnow
from ..profile import build_profile
from ..providers.token_counter import TokenCounter
from ..query import (
    Answer,
    QueryRecordOptions,
    answer_query,
    as_chat_model,
    chat_generator,
    record_options,
    update_episode_outcome,
)
from ..recall import ContextBundle, RecallConfig, recall
from ..recall.assemble import Charges
from ..recall.feedback import record_feedback
from ..recall.items import Layout, RecallItem
from ..security import scanner_for
from ..wakeup import wake_up
from .loop import engine_verb
from .session import Session

if TYPE_CHECKING:
    from .uniko import Uniko

#: Sessions ``Agent.sessions`` lists at most (every session of an agent, in practice).
SESSIONS_SCAN = 100_000


def _refuse_secret_id(config: UnikoConfig, agent_id: str) -> None:
    """An agent id holding a secret (``sk-live-…``, an AWS key id) is refused, as a turn or session
    id is at ingest: every node, log line and export names its agent, so the secret would be
    everywhere, and masking it would make it another agent. Only when masking is on."""
    if config.ingest.redact_secrets:
        scanner_for(tuple(config.ingest.secret_patterns_extra)).check_ids({"id": agent_id}, "the agent")


def _name_arg(value: object, verb: str, what: str) -> str:
    """A name or id argument of ``verb``: a non-empty string. Anything else (a ``None`` from a
    lookup that found nothing, a number) is refused here, saying what was expected and what came,
    instead of failing as a raw ``TypeError`` deep in the engine."""
    if isinstance(value, str) and value.strip():
        return value
    if value is None:
        got = "None"
    elif isinstance(value, str):
        got = "an empty string"
    else:
        got = f"{type(value).__name__} {value!r:.40}"
    raise ValidationError(f"{verb}: {what} must be a non-empty string, got {got}")


def _flag_arg(value: object, verb: str, what: str, *, optional: bool = False) -> None:
    """A yes/no argument of ``verb``: ``True`` or ``False`` (or ``None`` when ``optional``). A
    string is refused, not read by its truth: ``hard="false"`` is a non-empty string, and read
    that way it would delete what the caller asked to keep redacted."""
    if isinstance(value, bool) or (optional and value is None):
        return
    raise ValidationError(
        f"{verb}: {what} must be True or False{' (or None)' if optional else ''}, "
        f"got {type(value).__name__} {value!r:.40}"
    )


#: Tokens of a bundle's frame (header line, ``<memory>`` tags, line breaks) per token counter and
#: layout, with the counter itself (kept, so its id is never another counter's).
_FRAMES: dict[tuple[int, str], tuple[TokenCounter, int]] = {}


def _frame_tokens(counter: TokenCounter, layout: Layout) -> int:
    """What every non-empty ``render()`` in ``layout`` spends before its first entry, counted by
    ``counter`` (once per counter and layout)."""
    key = (id(counter), layout)
    held = _FRAMES.get(key)
    if held is None or held[0] is not counter:
        held = _FRAMES[key] = (counter, Charges.of(counter, layout).frame)
    return held[1]


class Agent:
    """One tenant's memory: sessions, recall, consolidation, forgetting."""

    def __init__(self, uni: Uniko, agent_id: str) -> None:
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ValidationError("agent id must be a non-empty string")
        _refuse_secret_id(uni.config, agent_id)
        self._uni = uni
        self.agent_id = agent_id

    @property
    def uniko(self) -> Uniko:
        """The engine this agent's memory lives in (``run_sync``, ``run_async``, ``kb``)."""
        return self._uni

    @property
    def config(self) -> UnikoConfig:
        """The engine's config, which governs this agent (its ingest limits, cadences, ...)."""
        return self._uni.config

    def session(self, session_id: str) -> Session:
        return Session(self._uni, self.agent_id, session_id)

    @engine_verb
    async def flush(self, timeout: float | None = None) -> None:
        await self._uni._pipeline.flush(self.agent_id, timeout)
        await self._uni.access.flush(self.agent_id)

    def _config(self, cfg: RecallConfig | None, options: Mapping[str, Any]) -> RecallConfig:
        base = cfg or self._uni.recall_config
        config = base.with_options(**options) if options else base
        self._check_budget(config)
        return config

    async def _read_your_writes(self, config: RecallConfig) -> None:
        """A turn observed a moment ago is ranked with its vector and statements: wait, at most
        ``read_after_write_secs``, for this agent's pending background work (none: no wait)."""
        if config.read_after_write_secs > 0:
            with contextlib.suppress(TimeoutError):
                await self._uni._pipeline.flush(self.agent_id, config.read_after_write_secs)

    def _check_budget(self, config: RecallConfig) -> None:
        """A ``token_budget`` too small for the bundle's frame could only ever return ``""``: it is
        refused, naming the smallest budget that holds anything, rather than recalled silently."""
        counter = self._uni.kb.token_counter
        frame = _frame_tokens(counter, config.layout)
        if config.token_budget <= frame:
            raise ValidationError(
                f"token_budget={config.token_budget} cannot hold any memory: the frame of the rendered "
                f"bundle (its header line and <memory> tags) alone takes {frame} tokens "
                f"({counter.name} counter), so nothing would be recalled; give "
                f"token_budget={frame + 1} or more (a useful bundle needs a few hundred tokens; the "
                f"default is {self._uni.recall_config.token_budget})"
            )

    @engine_verb
    async def recall(self, query: str, cfg: RecallConfig | None = None, **options: Any) -> ContextBundle:
        """Recall a token-budgeted ``ContextBundle`` for ``query``.

        ``options`` override fields of the config: ``limit``, ``token_budget``, scope filters
        (``sessions``, ``participants``, ``since``, ``until``, ``categories``), ``viewer``,
        ``reference_ts`` (what "last May" is relative to), ``explain``; a tuning group as a
        partial dict (``phases={"phase2_coverage_gate": 0.5}``, ``RecallConfig.with_options``).
        An unknown option is a ``ConfigError`` naming the one it probably meant (``top_k`` ->
        ``limit``, ``budget`` -> ``token_budget``, ``user_id`` -> ``viewer``). A ``token_budget``
        no larger than the bundle's frame (header line and ``<memory>`` tags: about 60 tokens of
        the default counter) is a ``ValidationError`` naming the smallest
        budget that can hold a memory; an empty bundle otherwise means nothing matched.
        """
        uni = self._uni
        config = self._config(cfg, options)
        await self._read_your_writes(config)
        bundle = await recall(
            uni.kb,
            query,
            config,
            agent=self.agent_id,
            nlp=uni.nlp,
            cache=uni.recall_cache,
        )
        if config.feedback.track_access and bundle.items:
            uni.access.note(self.agent_id, [i.node_id for i in bundle.items], utcnow())
        return bundle

    @engine_verb
    async def wake_up(
        self,
        max_tokens: int | None = None,
        *,
        viewer: Viewer | None = None,
        sessions: Sequence[str] | None = None,
        reference_ts: datetime | None = None,
        layout: Layout = "grouped",
        cfg: WakeupConfig | None = None,
    ) -> ContextBundle:
        """The wake-up context for the start of a conversation, chosen without a query: one L0
        line (participants, span of time, counts) and L1 one-liners (``uniko_memory.wakeup``).
        ``bundle.render()`` holds at most ``max_tokens`` (default ``config.wakeup.max_tokens``)
        tokens of the engine's token counter; ``viewer`` and ``sessions`` scope it as they scope
        recall."""
        uni = self._uni
        return await wake_up(
            uni.kb,
            agent=self.agent_id,
            cfg=cfg,
            max_tokens=max_tokens,
            viewer=viewer,
            sessions=sessions,
            reference_ts=reference_ts,
            layout=layout,
        )

    @engine_verb
    async def profile(
        self,
        name: str,
        max_tokens: int = 400,
        *,
        viewer: Viewer | None = None,
        reference_ts: datetime | None = None,
    ) -> ContextBundle:
        """What is true now about one participant or entity (``uniko_memory.profile``): its open
        Facts as of ``reference_ts`` (default now), grouped by attribute ("residence: ...",
        "diet: ..."), each dated and cited to its turns; a value a newer one replaced is left out.
        ``bundle.render()`` holds at most ``max_tokens`` tokens of the engine's token counter."""
        return await build_profile(
            self._uni.kb,
            agent=self.agent_id,
            name=name,
            max_tokens=max_tokens,
            viewer=viewer,
            reference_ts=reference_ts,
        )

    @engine_verb
    async def feedback(
        self,
        bundle_or_item_ids: ContextBundle | Sequence[RecallItem | str],
        useful: bool,
        *,
        weight: float = 1.0,
    ) -> int:
        """Rate recalled memories: one echo (``useful``) or fizzle of ``weight`` on each item of
        a bundle (or each item / node id given), stored durably per node. Later recalls learn
        from it (``RecallFeedback``: per-agent alpha, exploration, procedure ROI, document trust)
        and cached recalls are invalidated. Returns how many stored memories were rated (ids of
        nodes this agent does not have are ignored)."""
        if not isinstance(useful, bool):
            raise ValidationError("feedback: useful must be True or False")
        if not isinstance(bundle_or_item_ids, ContextBundle | Iterable):
            raise ValidationError(
                "feedback takes a ContextBundle, a list of its items or a list of node ids, "
                f"got {type(bundle_or_item_ids).__name__}"
            )
        uni = self._uni
        return await record_feedback(
            uni.kb.store, self.agent_id, bundle_or_item_ids, useful, weight, uni.recall_config.feedback
        )

    @engine_verb
    async def audit(self, cfg: AuditConfig | None = None) -> AuditReport:
        """Check every read path (``integrity.ReadPath``): no forgotten, invalidated or
        out-of-scope memory of this agent comes back. Read-only; see ``uniko_memory.integrity``."""
        return await audit(self._uni, self.agent_id, cfg)

    @engine_verb
    async def consolidate(self) -> CycleStats | None:
        """Consolidate now (after pending post-ingest work); None if the cycle failed (logged)."""
        await self._uni._pipeline.flush(self.agent_id)
        result: CycleStats | None = await self._uni._pipeline.consolidate(self.agent_id)
        return result

    @engine_verb
    async def finalize_session(self, session_id: str, *, close: bool = False) -> FinalizeReport:
        return await self.session(session_id).finalize(close=close)

    @engine_verb
    async def maintain_sessions(self, inactivity_secs: float | None = None) -> list[str]:
        """Close and finalise sessions idle longer than ``session_inactivity_secs``."""
        return await self._uni._cycles.maintain_sessions(self.agent_id, inactivity_secs)

    @engine_verb
    async def sweep(self, *, llm: Any = None) -> SweepReport:
        """Run the cortex sweep now (procedures, topics, decay, closing idle sessions), after pending
        post-ingest work. ``llm`` (a LangChain chat model or a ``ChatModel``; default the
        ``chat_model`` given to ``Uniko.open``) writes abstractive summaries of the sessions it
        closes, through the circuit breaker; a failing model leaves their extractive summaries."""
        uni = self._uni
        await uni._pipeline.flush(self.agent_id)
        async with uni._pipeline.exclusive_cycle(self.agent_id):
            chat = as_chat_model(llm, uni.llm_breaker) if llm is not None else None
            return await uni._cycles.sweep(self.agent_id, chat=chat)

    @engine_verb
    async def sessions(self) -> list[SessionNode]:
        """Every session of this agent (open and closed), as stored ``Session`` nodes."""
        found = await self._uni.kb.store.find(self.agent_id, Tier.SESSION, limit=SESSIONS_SCAN)
        return [n for n in found if isinstance(n, SessionNode)]

    @engine_verb
    async def get_nodes(self, node_ids: Sequence[str]) -> dict[str, Node]:
        """The nodes of this agent with these ids (an id of another agent's node is absent;
        a redacted node comes back blank, flagged ``redacted``)."""
        return await self._uni.kb.store.get_many(self.agent_id, list(node_ids))

    # ------------------------------------------------------------------ answers and procedures
    @engine_verb
    async def answer(
        self,
        question: str,
        llm: Any = None,
        *,
        record: bool | QueryRecordOptions = False,
        outcome: str | None = None,
        use_procedures: bool = False,
        cfg: RecallConfig | None = None,
        **options: Any,
    ) -> Answer:
        """Recall for ``question`` and answer it with a chat model (a LangChain chat model, or any
        ``ChatModel``). The prompt quotes the bundle (with dates) as data, never as instructions.

        ``record=True`` (or ``QueryRecordOptions``) stores the exchange as a query Episode that P5
        learns from; ``outcome`` is its outcome ("success" / "failure"), if known already.
        """
        if llm is None:
            raise ValidationError("answer() needs a chat model: answer(question, llm=...)")
        uni = self._uni
        chat = as_chat_model(llm, uni.llm_breaker)
        config = self._config(cfg, options)
        await self._read_your_writes(config)
        return await answer_query(
            uni.kb,
            question,
            config,
            chat_generator(chat, config.reference_ts or utcnow()),
            record_options(record, outcome),
            agent=self.agent_id,
            nlp=uni.nlp,
            cache=uni.recall_cache,
            use_procedures=use_procedures,
        )

    @engine_verb
    async def report_outcome(self, episode_id: str, outcome: str, importance: float | None = None) -> Episode:
        """Set the outcome of a recorded query Episode once the answer has been judged."""
        return await update_episode_outcome(
            self._uni.kb.store, self.agent_id, episode_id, outcome, importance, config=self._uni.config
        )

    @engine_verb
    async def record_procedure_use(self, procedure_id: str, success: bool) -> Procedure:
        return await record_procedure_use(
            self._uni.kb.store, self._uni.config, self.agent_id, procedure_id, success
        )

    @engine_verb
    async def match_procedures(self, state: dict[str, Any]) -> list[Procedure]:
        return await match_procedures(self._uni.kb.store, self.agent_id, state)

    # ------------------------------------------------------------------ forgetting
    @engine_verb
    async def forget_turn(self, session_id: str, turn_id: str) -> ForgetReport:
        """Redact one turn, its Observations and what was derived only from it; rebuild its session."""
        self._turn_args("forget_turn", session_id, turn_id)
        return await self._uni._forgetting.forget_turn(self.agent_id, session_id, turn_id, hard=False)

    @engine_verb
    async def delete_turn(self, session_id: str, turn_id: str) -> ForgetReport:
        """Hard-delete one turn and its Observations; Facts left without support are closed."""
        self._turn_args("delete_turn", session_id, turn_id)
        return await self._uni._forgetting.forget_turn(self.agent_id, session_id, turn_id, hard=True)

    @engine_verb
    async def forget_session(self, session_id: str, *, hard: bool = False) -> list[ForgetReport]:
        """Forget every turn of a session as ``forget_turn`` does (``hard``: as ``delete_turn``),
        one durable job per turn; returns their reports (empty for a session with no live turn)."""
        self.session(session_id)  # an id no session could carry is refused, as by ``session``
        _flag_arg(hard, "forget_session", "hard")
        return await self._uni._forgetting.forget_session(self.agent_id, session_id, hard=hard)

    @engine_verb
    async def forget_participant(
        self, participant: str, *, hard: bool = False, about: bool | None = None
    ) -> ForgetReport:
        """GDPR: redact (or, ``hard``, delete) everything ``participant`` said and everything about them.

        ``about`` (default: on for ``hard``, off otherwise) also forgets what others said about them:
        every Message by someone else that mentions the person (its mentions resolve to their
        Entity), with all derived from it; ``ForgetReport.about_messages`` counts them. The call is
        a durable job: cut short (a crash, an error), it is finished by the next ``Uniko.open`` or
        the next forget of this agent, and calling it again completes it and reports. Forgetting a
        participant whose hard forget already completed reports ``nothing_to_do``; a participant
        never stored raises ``NotFound``.
        """
        _name_arg(participant, "forget_participant", "participant (the sender id they spoke as)")
        _flag_arg(hard, "forget_participant", "hard")
        _flag_arg(about, "forget_participant", "about", optional=True)
        return await self._uni._forgetting.forget_participant(
            self.agent_id, participant, hard=hard, about=about
        )

    @staticmethod
    def _turn_args(verb: str, session_id: object, turn_id: object) -> None:
        _name_arg(session_id, verb, "session_id")
        _name_arg(turn_id, verb, "turn_id (the id the turn was observed with)")

    @engine_verb
    async def stats(self) -> dict[str, int]:
        store = self._uni.kb.store
        return {t.value: n for t in Tier if (n := await store.count(self.agent_id, t))}

    @engine_verb
    async def ingest_artifact(
        self,
        source: ArtifactSource,
        *,
        title: str | None = None,
        mime_type: str | None = None,
        external_id: str | None = None,
        session: str | Session | None = None,
        visibility: str = "public",
    ) -> ArtifactReport:
        """Store a text, Markdown, HTML or PDF document (a path or bytes) as an Artifact with Chunks.

        One unit commits the bytes, the Artifact and its chunks (BM25-searchable at once); the
        chunks are then embedded in this call (vector-searchable on return). A document whose text
        cannot be extracted is still stored, with ``extraction_failed`` set. See docs/artifacts.md.
        """
        uni = self._uni
        return await ArtifactIngest(uni.kb.store, uni.config, uni.kb.embedder).ingest(
            self.agent_id,
            source,
            title=title,
            mime_type=mime_type,
            external_id=external_id,
            session=session.session_id if isinstance(session, Session) else session,
            visibility=visibility,
        )

    # Blocking twins (thin: they run the async verb on the engine loop).
    def flush_sync(self, timeout: float | None = None) -> None:
        self._uni.run_sync(self.flush(timeout))

    def recall_sync(self, query: str, cfg: RecallConfig | None = None, **options: Any) -> ContextBundle:
        return self._uni.run_sync(self.recall(query, cfg, **options))

    def wake_up_sync(self, max_tokens: int | None = None, **options: Any) -> ContextBundle:
        return self._uni.run_sync(self.wake_up(max_tokens, **options))

    def profile_sync(
        self,
        name: str,
        max_tokens: int = 400,
        *,
        viewer: Viewer | None = None,
        reference_ts: datetime | None = None,
    ) -> ContextBundle:
        return self._uni.run_sync(self.profile(name, max_tokens, viewer=viewer, reference_ts=reference_ts))

    def feedback_sync(
        self,
        bundle_or_item_ids: ContextBundle | Sequence[RecallItem | str],
        useful: bool,
        *,
        weight: float = 1.0,
    ) -> int:
        return self._uni.run_sync(self.feedback(bundle_or_item_ids, useful, weight=weight))

    def audit_sync(self, cfg: AuditConfig | None = None) -> AuditReport:
        return self._uni.run_sync(self.audit(cfg))

    def consolidate_sync(self) -> CycleStats | None:
        return self._uni.run_sync(self.consolidate())

    def finalize_session_sync(self, session_id: str, *, close: bool = False) -> FinalizeReport:
        return self._uni.run_sync(self.finalize_session(session_id, close=close))

    def maintain_sessions_sync(self, inactivity_secs: float | None = None) -> list[str]:
        return self._uni.run_sync(self.maintain_sessions(inactivity_secs))

    def sweep_sync(self, *, llm: Any = None) -> SweepReport:
        return self._uni.run_sync(self.sweep(llm=llm))

    def sessions_sync(self) -> list[SessionNode]:
        return self._uni.run_sync(self.sessions())

    def get_nodes_sync(self, node_ids: Sequence[str]) -> dict[str, Node]:
        return self._uni.run_sync(self.get_nodes(node_ids))

    def stats_sync(self) -> dict[str, int]:
        return self._uni.run_sync(self.stats())

    def answer_sync(
        self,
        question: str,
        llm: Any = None,
        *,
        record: bool | QueryRecordOptions = False,
        outcome: str | None = None,
        use_procedures: bool = False,
        cfg: RecallConfig | None = None,
        **options: Any,
    ) -> Answer:
        return self._uni.run_sync(
            self.answer(
                question,
                llm,
                record=record,
                outcome=outcome,
                use_procedures=use_procedures,
                cfg=cfg,
                **options,
            )
        )

    def report_outcome_sync(self, episode_id: str, outcome: str, importance: float | None = None) -> Episode:
        return self._uni.run_sync(self.report_outcome(episode_id, outcome, importance))

    def record_procedure_use_sync(self, procedure_id: str, success: bool) -> Procedure:
        return self._uni.run_sync(self.record_procedure_use(procedure_id, success))

    def match_procedures_sync(self, state: dict[str, Any]) -> list[Procedure]:
        return self._uni.run_sync(self.match_procedures(state))

    def forget_turn_sync(self, session_id: str, turn_id: str) -> ForgetReport:
        return self._uni.run_sync(self.forget_turn(session_id, turn_id))

    def delete_turn_sync(self, session_id: str, turn_id: str) -> ForgetReport:
        return self._uni.run_sync(self.delete_turn(session_id, turn_id))

    def forget_session_sync(self, session_id: str, *, hard: bool = False) -> list[ForgetReport]:
        return self._uni.run_sync(self.forget_session(session_id, hard=hard))

    def forget_participant_sync(
        self, participant: str, *, hard: bool = False, about: bool | None = None
    ) -> ForgetReport:
        return self._uni.run_sync(self.forget_participant(participant, hard=hard, about=about))

    def ingest_artifact_sync(self, source: ArtifactSource, **options: Any) -> ArtifactReport:
        return self._uni.run_sync(self.ingest_artifact(source, **options))
