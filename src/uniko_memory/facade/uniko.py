"""``Uniko``: the memory engine's handle — open, hand out agents, run coroutines, close.

It wires a ``KnowledgeBase`` (chosen by ``KnowledgeBase.from_config``) to the ingest steps, the
``PipelineSystem``, its ``Cycles`` (consolidation, sweep, session maintenance) and ``Forgetting``;
the orchestration lives there, not here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError as PydanticValidationError

from ..config import UnikoConfig
from ..cortex import SweepReport
from ..errors import ClosedError, ConfigError, UnikoError
from ..ingest.atomic import AtomicIngest
from ..ingest.document import DocumentTurns
from ..ingest.finalize import SessionFinalizer
from ..ingest.post import PostIngest
from ..ingest.restate import RestatePolicy
from ..knowledge_base import KnowledgeBase
from ..pipeline import Cycles, Forgetting, PipelineHealth, PipelineSystem
from ..providers.chat import CircuitBreaker
from ..query import agent_participant_id, as_chat_model
from ..recall import RecallCache, RecallConfig
from ..recall.access import AccessTracker
from ..store.validation import check_agent
from .agent import Agent
from .loop import EngineLoop, engine_verb, on_loop

T = TypeVar("T")


class Uniko:
    """The memory engine: a knowledge base, the NLP and embedding models, and the pipelines."""

    def __init__(self, kb: KnowledgeBase, nlp: Any, engine: EngineLoop | None) -> None:
        self.kb = kb
        self.config = kb.config
        self.nlp = nlp
        self._engine_thread = engine
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        self._atomic = AtomicIngest(kb.store, kb.config, nlp)
        self._post = PostIngest(
            kb.store,
            nlp,
            kb.embedder,
            filler_phrases=kb.config.nlp.filler_phrases,
            restate=RestatePolicy.of(kb.config.ingest),
            documents=DocumentTurns.of(kb.config.ingest),
        )
        self._finalizer = SessionFinalizer(kb.store, kb.config, kb.embedder)
        pc = kb.config.pipeline
        #: The LLM circuit breaker shared by answers and triple refinement (health reports it).
        self.llm_breaker = CircuitBreaker(pc.circuit_failure_threshold, pc.circuit_recovery_ms / 1000)
        self._cycles = Cycles(kb, self._finalizer, participant_of=agent_participant_id)
        self._pipeline = PipelineSystem(
            kb.config,
            self._atomic,
            self._post,
            consolidate=self._cycles.consolidate,
            breaker=self.llm_breaker,
        )
        self.recall_config = RecallConfig.from_uniko_config(kb.config)
        self.recall_cache = RecallCache()
        #: Recall reads recorded as usage off the read path (``recall.access``).
        self.access = AccessTracker(kb.store, self.recall_config.feedback.access_batch)
        self._forgetting = Forgetting(kb, self._pipeline, self._finalizer, self.recall_cache)

    # ------------------------------------------------------------------ construction
    @classmethod
    async def open(
        cls,
        path: str | Path,
        config: UnikoConfig | None = None,
        *,
        embedder: Any = None,
        nlp: Any = None,
        weaviate: Any = None,
        chat_model: Any = None,
        token_counter: Any = None,
    ) -> Uniko:
        """Open (or create) a memory with the offline default models.

        The embedded store lives at ``path``. With ``weaviate=`` (a connected weaviate-client v4
        client) or ``config.store.backend == "weaviate"`` (connects to ``WEAVIATE_URL``), the
        memory lives in Weaviate instead and ``path`` is ignored. ``chat_model`` (a LangChain chat
        model or a ``ChatModel``) writes abstractive summaries of sessions the cortex sweep closes.
        ``token_counter`` counts ``token_budget`` in your model's tokens: a ``TokenCounter``, an
        OpenAI encoding name (``"o200k_base"``) or a ``str -> int`` callable (default: MiniLM).
        """
        kb = await KnowledgeBase.from_config(
            config, path=path, embedder=embedder, token_counter=token_counter, weaviate=weaviate
        )
        return await (await cls._start(kb, nlp, None))._with_chat_model(chat_model)

    @classmethod
    async def open_weaviate(
        cls,
        url: str,
        config: UnikoConfig | None = None,
        *,
        grpc_url: str | None = None,
        api_key: str | None = None,
        collection_prefix: str | None = None,
        timeout: tuple[float, float, float] = (2.0, 30.0, 90.0),
        skip_init_checks: bool = False,
        embedder: Any = None,
        nlp: Any = None,
        chat_model: Any = None,
        token_counter: Any = None,
    ) -> Uniko:
        """Open a memory stored in the Weaviate server at ``url``, in one call.

        Connects an async weaviate-client (``store.weaviate.connect_url``: gRPC on ``grpc_url``,
        default port 50051 of the same host; ``api_key`` for authenticated servers and Weaviate
        Cloud), opens the store under ``collection_prefix`` (default ``config.store.collection_prefix``;
        every process of a deployment uses the same one) and starts the engine. ``close`` closes the
        client. ``skip_init_checks`` skips the client's gRPC health probe and PyPI version lookup
        (closed networks). The other options are ``open``'s.
        """
        from ..store.weaviate.client import connect_url

        cfg = config or UnikoConfig()
        if collection_prefix is not None:
            cfg = cfg.model_copy(deep=True)
            try:
                cfg.store.collection_prefix = collection_prefix  # validated on assignment
            except PydanticValidationError as exc:
                raise ConfigError(f"invalid collection_prefix {collection_prefix!r}: {exc}") from None
        client = await connect_url(
            url, grpc_url=grpc_url, api_key=api_key, timeout=timeout, skip_init_checks=skip_init_checks
        )
        try:
            kb = await KnowledgeBase.from_config(
                cfg, embedder=embedder, token_counter=token_counter, weaviate=client, owns_weaviate=True
            )
        except BaseException:
            await client.close()
            raise
        return await (await cls._start(kb, nlp, None))._with_chat_model(chat_model)

    @classmethod
    async def in_memory(
        cls,
        config: UnikoConfig | None = None,
        *,
        embedder: Any = None,
        nlp: Any = None,
        chat_model: Any = None,
        token_counter: Any = None,
    ) -> Uniko:
        """A throw-away memory (an embedded store in a temporary file, removed on close)."""
        kb = await KnowledgeBase.from_config(
            config, in_memory=True, embedder=embedder, token_counter=token_counter
        )
        return await (await cls._start(kb, nlp, None))._with_chat_model(chat_model)

    @classmethod
    async def from_knowledge_base(cls, kb: KnowledgeBase, *, nlp: Any = None) -> Uniko:
        return await cls._start(kb, nlp, None)

    @classmethod
    async def _start(cls, kb: KnowledgeBase, nlp: Any, engine: EngineLoop | None) -> Uniko:
        if nlp is None:
            from ..nlp.pipeline import NlpPipeline

            nlp = NlpPipeline(kb.config.models.spacy_model)
        uni = cls(kb, nlp, engine)
        await uni._pipeline.start()
        if not getattr(kb.store, "read_only", False):  # a reader leaves that to the writer
            for agent in await kb.store.agents():  # finish what a previous process left undone
                await uni._pipeline.recover(agent)
                await uni._forgetting.resume(agent)
        return uni

    @classmethod
    def open_sync(cls, path: str | Path, config: UnikoConfig | None = None, **kwargs: Any) -> Uniko:
        return cls._sync_factory(lambda: cls.open(path, config, **kwargs))

    @classmethod
    def open_weaviate_sync(cls, url: str, config: UnikoConfig | None = None, **kwargs: Any) -> Uniko:
        """``open_weaviate`` for synchronous code: the engine runs on its own loop thread."""
        return cls._sync_factory(lambda: cls.open_weaviate(url, config, **kwargs))

    @classmethod
    def in_memory_sync(cls, config: UnikoConfig | None = None, **kwargs: Any) -> Uniko:
        return cls._sync_factory(lambda: cls.in_memory(config, **kwargs))

    @classmethod
    def _sync_factory(cls, make: Callable[[], Awaitable[Uniko]]) -> Uniko:
        engine = EngineLoop()

        async def build() -> Uniko:
            uni = await make()
            uni._engine_thread = engine
            return uni

        try:
            return engine.run(build())
        except BaseException:
            engine.stop()
            raise

    # ------------------------------------------------------------------ settings of the cycles
    @property
    def triple_source(self) -> Any:
        """A ``consolidation.TripleSource`` (e.g. ``LlmTripleSource``); None = the rule triples."""
        return self._cycles.triple_source

    @triple_source.setter
    def triple_source(self, source: Any) -> None:
        self._cycles.triple_source = source

    @property
    def summary_chat(self) -> Any:
        """A ``ChatModel`` for abstractive summaries of the sessions the cortex sweep closes
        (``chat_model=`` of ``open`` / ``in_memory``, or ``set_chat_model``); None = extractive only."""
        return self._cycles.summary_chat

    @summary_chat.setter
    def summary_chat(self, chat: Any) -> None:
        self._cycles.summary_chat = chat

    @property
    def last_sweep(self) -> dict[str, SweepReport]:
        """Each agent's latest ``SweepReport`` (from a cycle or ``Agent.sweep``)."""
        return self._cycles.last_sweep

    def set_chat_model(self, llm: Any) -> Uniko:
        """Use ``llm`` (a LangChain chat model, wrapped behind ``llm_breaker``, or a ``ChatModel``)
        for abstractive session summaries in the sweep; None turns them off. Returns self."""
        self.summary_chat = as_chat_model(llm, self.llm_breaker)
        return self

    async def _with_chat_model(self, llm: Any) -> Uniko:
        try:
            return self.set_chat_model(llm)
        except BaseException:  # not a chat model: do not leak a running engine
            await self.close()
            raise

    # ------------------------------------------------------------------ use
    def agent(self, agent_id: str) -> Agent:
        """One tenant's memory; an id no node could carry is refused here, not at the first write."""
        self._check_open()
        return Agent(self, check_agent(agent_id))

    @property
    def _uni(self) -> Uniko:
        return self

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop that owns the engine's store; every verb runs on it."""
        return self._loop

    @property
    def pipeline(self) -> PipelineSystem:
        """The engine's ``PipelineSystem`` (``flush``, ``exclusive_cycle``, ``health``)."""
        return self._pipeline

    def health(self) -> dict[str, Any]:
        ph: PipelineHealth = self._pipeline.health()
        nlp_health = self.nlp.health() if hasattr(self.nlp, "health") else {}
        return {
            "pipeline": ph.model_dump(),
            "nlp": nlp_health,
            "embedder": getattr(self.kb.embedder, "model_id", None),
        }

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this Uniko handle is closed")

    def _refuse_if_closed(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Raise ``ClosedError`` for a closed handle before ``coro`` is handed to its loop: that
        loop may have stopped, and a coroutine sent there would never run, so its caller would
        wait forever. ``coro`` is closed, so no "never awaited" warning follows."""
        if self._closed:
            coro.close()
            raise ClosedError("this Uniko handle is closed")

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a coroutine of this engine on its loop, from whichever loop the caller runs
        (forwarded to the engine loop when that is another one; integrations use it); a closed
        handle raises ``ClosedError`` at once."""
        self._refuse_if_closed(coro)
        return await on_loop(self._loop, coro)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of this engine to completion from synchronous code: every ``*_sync``
        method (Uniko, Agent, Session, UnitBuilder) and the integrations come through here.
        A closed handle raises ``ClosedError`` at once (never a wait on a stopped loop); the
        engine's own loop gets ``UnikoError``, where it would deadlock."""
        self._refuse_if_closed(coro)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            coro.close()
            raise UnikoError(
                "a *_sync method was called on the engine's own event loop; await the async method"
            )
        if self._engine_thread is not None:
            return self._engine_thread.run(coro)
        if running is None and not self._loop.is_running():
            return self._loop.run_until_complete(coro)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def close(self, timeout: float | None = None) -> None:
        """Drain the pipelines and close the store; closing a closed handle does nothing."""
        if self._closed:
            return
        await self._close(timeout)

    @engine_verb
    async def _close(self, timeout: float | None) -> None:
        # On the engine loop, so the check and the set below cannot interleave: two concurrent
        # closes share one shutdown instead of draining the pipelines and releasing the store twice.
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown(timeout))
        await asyncio.shield(self._closing)

    async def _shutdown(self, timeout: float | None) -> None:
        await self._pipeline.shutdown(timeout)
        await self.access.flush()
        await self.kb.close()
        self._closed = True

    def close_sync(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        self.run_sync(self.close(timeout))
        if self._engine_thread is not None:
            self._engine_thread.stop()

    async def __aenter__(self) -> Uniko:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> Uniko:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()
