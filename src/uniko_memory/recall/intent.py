"""Intent profiling: one NLP pass over the question, then rules and store look-ups; no LLM.

The profile carries what steers the cascade: entity references resolved to stored Entities and
Participants (graph seeds, speaker scoping), the temporal window, the expected answer type, the
keywords and query variants, and the query embedding(s).
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..config import RecallIntent
from ..errors import ValidationError
from ..model import Entity, Participant, Tier, entity_id
from ..model.text import without_surrogates
from ..model.time import utcnow
from ..nlp.observation.lexicon import EVENT_NOUNS
from ..store.protocol import Store
from .question_slots import question_slots

log = logging.getLogger(__name__)

ENTITY_TYPES = ("person", "organization", "location", "date", "product", "event", "work_of_art", "other")

_W = r"\b"
ANSWER_TYPES: list[tuple[str, re.Pattern[str]]] = [
    (
        "person",
        re.compile(
            r"^(who|whose|by whom|with whom|to whom)\b|\bwhich (person|friend|coworker|colleague|teacher|doctor|"
            r"partner)\b|\bwhat is (his|her|their) name\b"
        ),
    ),
    (
        "location",
        re.compile(
            r"^(where|from where|to where)\b|\b(which|what) (city|country|place|state|park|address|venue|building|"
            r"street|neighborhood|hotel|restaurant|cafe|store|airport)\b"
        ),
    ),
    ("date", re.compile(r"^when\b|\bwhat (time|day|date|year|month|hour)\b|\bhow long ago\b")),
    (
        "measurement",
        re.compile(
            r"^how (many|much|long|old|far|tall|big|fast|heavy|deep|wide)\b|\bhow many (days|years|months|weeks|"
            r"hours|minutes|seconds|miles|km|kilometers)\b"
        ),
    ),
    (
        "organization",
        re.compile(
            r"\b(which|what) (company|organization|firm|university|college|school|team|brand|agency)\b"
        ),
    ),
    ("other", re.compile(r"\b(which|what) (movie|book|song|album|game|show|film|novel|poem|painting)\b")),
]


def validate_query(query: object, max_chars: int) -> str:
    """The query as recall uses it: lone surrogates become U+FFFD (as in a stored turn)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("the query must be a non-empty string")
    if len(query) > max_chars:
        raise ValidationError(f"the query has {len(query):,} characters, over the limit of {max_chars:,}")
    return without_surrogates(str(query))


def predict_answer_type(question: str) -> str | None:
    """The first matching rule of the reference table over the lower-cased question, else None."""
    q = question.strip().lower()
    for name, pattern in ANSWER_TYPES:
        if pattern.search(q):
            return name
    return None


@dataclass
class IntentProfile:
    query: str
    reference_ts: datetime
    entity_refs: list[str] = field(default_factory=list)
    seed_ids: list[str] = field(default_factory=list)
    participant_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    #: The Entities among ``entity_ids`` that name a participant (the same person as a hub).
    participant_entity_ids: list[str] = field(default_factory=list)
    unstable_entities: list[str] = field(default_factory=list)
    #: The slots the question asks about ("residence/maya": ``recall.question_slots``).
    slot_keys: list[str] = field(default_factory=list)
    #: Every participant's name (they occur in every turn: no expansion word, ``recall.expansion``).
    participant_names: list[str] = field(default_factory=list)
    temporal_window: tuple[datetime, datetime] | None = None
    temporal_granularity: str | None = None
    expected_answer_type: str | None = None
    keywords: list[str] = field(default_factory=list)
    variants: list[tuple[str, str]] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    facets: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    #: Per named participant: the question without that name (keywords, vector) for searches
    #: already scoped to the participant, where the name only adds noise.
    without_name: dict[str, tuple[str, np.ndarray | None]] = field(default_factory=dict)

    @property
    def primary_vector(self) -> np.ndarray | None:
        return self.vectors.get("original")

    def summary(self) -> dict[str, Any]:
        return {
            "entity_refs": self.entity_refs,
            "seeds": self.seed_ids,
            "participants": self.participant_ids,
            "temporal_window": [t.isoformat() for t in self.temporal_window]
            if self.temporal_window
            else None,
            "expected_answer_type": self.expected_answer_type,
            "slots": self.slot_keys,
            "keywords": self.keywords,
            "variants": [v for v, _ in self.variants],
        }


_NAMES_CACHE: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, dict[str, str]]]] = (
    weakref.WeakKeyDictionary()
)


async def _participant_names(store: Store, agent: str) -> dict[str, str]:
    """Participant names of the agent, cached per store until the agent's next write."""
    gen = store.generation(agent)
    per_store = _NAMES_CACHE.setdefault(store, {})
    hit = per_store.get(agent)
    if hit is not None and hit[0] == gen:
        return hit[1]
    nodes = await store.find(agent, Tier.PARTICIPANT, limit=10_000)
    names = {n.name: n.id for n in nodes if isinstance(n, Participant)}
    per_store[agent] = (gen, names)
    return names


_WORD = re.compile(r"\w+")


def _without_names(query: str, names: dict[str, str]) -> dict[str, str]:
    """For each participant named in the query (whole words, any case, possessive too): the query
    with that name removed. Longer names first, so "Ann Lee" is not read as "Ann"."""
    out: dict[str, str] = {}
    masked = query  # names already found are blanked, so "Ann" is not found inside "Ann Lee"
    for name in sorted(names, key=len, reverse=True):
        pid = names[name]
        if not name.strip() or pid in out:
            continue
        pattern = re.compile(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", re.IGNORECASE)
        spans = [m.span() for m in pattern.finditer(masked)]
        if not spans:
            continue
        text, pos = [], 0
        for a, b in spans:
            text.append(query[pos:a])
            masked = masked[:a] + "\0" * (b - a) + masked[b:]
            pos = b
        text.append(query[pos:])
        out[pid] = " ".join(" ".join(text).split())
    return out


def _declarative(analysis: Any) -> str | None:
    """ "S V O" from the first subject-verb-object in the parse (the ``declarative`` variant)."""
    toks = getattr(analysis, "tokens", [])
    for t in toks:
        if t.dep in ("nsubj", "nsubjpass") and t.head is not None and 0 <= t.head < len(toks):
            verb = toks[t.head]
            objs = [o.text for o in toks if o.head == verb.i and o.dep in ("dobj", "attr", "pobj", "prep")]
            words = [t.text, verb.lemma, *objs]
            if len(words) >= 2:
                return " ".join(words)
    return None


async def build_intent_at(
    store: Store,
    agent: str,
    query: str,
    reference_ts: datetime | None,
    *,
    nlp: Any,
    embedder: Any,
    variants: list[str] | None = None,
    tuning: RecallIntent | None = None,
) -> IntentProfile:
    """Profile ``query`` as of ``reference_ts`` (relative phrases resolve against it; default now).

    ``tuning`` (default: the reference ``RecallIntent``) sets the numbers; ``variants`` (default:
    its ``query_variants``) the rewrites."""
    draft = await begin_intent(
        store, agent, query, reference_ts, nlp=nlp, embedder=embedder, variants=variants, tuning=tuning
    )
    return await draft.complete()


class IntentDraft:
    """A profile whose question vectors are still being computed in a worker thread: everything
    else (entities, keywords, variants, the name-stripped keywords) is in ``profile``, so keyword
    searches can run meanwhile. ``complete()`` adds the vectors to that same profile."""

    def __init__(
        self,
        profile: IntentProfile,
        pending: asyncio.Future[np.ndarray | None],
        stripped: list[str],
        embedder: Any,
    ) -> None:
        self.profile = profile
        self._pending = pending
        self._stripped = stripped  # participant ids, in the order of their vectors after the question's
        self._embedder = embedder
        self._done = False

    async def complete(self) -> IntentProfile:
        """The profile with its vectors (or BM25-only, noted in ``degraded``, when embedding failed)."""
        profile = self.profile
        if self._done:
            return profile
        self._done = True
        first = await self._pending
        for i, pid in enumerate(self._stripped, start=1):
            if pid in profile.without_name and first is not None:
                profile.without_name[pid] = (profile.without_name[pid][0], first[i])
        if first is not None:
            profile.vectors["original"] = first[0]
        elif self._embedder is None:
            profile.degraded.append("no embedder configured: keyword (BM25) search only")
        else:
            profile.degraded.append("embedder unavailable: vector search skipped, keyword (BM25) search only")
        # The keywords variant is for BM25; its vector would repeat the question's: not embedded.
        others = [(name, text) for name, text in profile.variants if name not in ("keywords", "original")]
        if others and first is not None:
            more = await _embed(self._embedder, [t for _, t in others])
            if more is not None:
                profile.vectors.update({name: more[i] for i, (name, _) in enumerate(others)})
        return profile

    def cancel(self) -> None:
        """Abandon the draft (its recall failed): the pending embedding's result is dropped."""
        self._done = True
        self._pending.cancel()


async def begin_intent(
    store: Store,
    agent: str,
    query: str,
    reference_ts: datetime | None,
    *,
    nlp: Any,
    embedder: Any,
    variants: list[str] | None = None,
    tuning: RecallIntent | None = None,
) -> IntentDraft:
    """``build_intent_at`` up to the question's vectors, which go on in a worker thread."""
    tuning = tuning or RecallIntent()
    from ..nlp.keywords import keywords as extract_keywords
    from ..nlp.ner import canonical_key, extract
    from ..nlp.temporal import resolve_temporal

    ref = reference_ts or utcnow()
    names = await _participant_names(store, agent)
    # Without each participant it names, the question searches that participant's own words.
    stripped = {pid: text for pid, text in _without_names(query, names).items() if text}
    # The question's vectors need no parse: embedded while the NLP pass runs. One step of the
    # loop lets the embedding reach its worker thread first: started after the NLP thread, it
    # waited for that thread's GIL (up to the 5 ms switch interval; a recall took 2 ms longer).
    original_vec = asyncio.ensure_future(_embed(embedder, [query, *stripped.values()]))
    await asyncio.sleep(0)
    # Entities, POS and keywords need no dependency parse (the shallow pass gives the same ones);
    # only the declarative rewrite reads the parse.
    wanted = variants or list(tuning.query_variants) or ["keywords"]
    shallow = getattr(nlp, "analyze_shallow", None)
    analyze = nlp.analyze if shallow is None or "declarative" in wanted else shallow
    # A short question is analysed here while the model is free (``RecallIntent.inline_nlp_chars``).
    here = getattr(nlp, "try_analyze_shallow", None) if analyze == shallow else None
    done_here = here([query]) if here is not None and len(query) <= tuning.inline_nlp_chars else None
    analyses = done_here if done_here is not None else await asyncio.to_thread(analyze, [query])
    analysis = analyses[0]
    ner = extract(analysis, list(names), reference=ref)
    profile = IntentProfile(query=query, reference_ts=ref, participant_names=sorted(names))
    refs = [e for e in ner.entities if len(e.name) >= tuning.min_entity_chars]
    profile.entity_refs = list(dict.fromkeys(e.name for e in refs))
    profile.slot_keys = question_slots(query, profile.entity_refs, EVENT_NOUNS)
    by_key = {canonical_key(n): pid for n, pid in names.items()}
    for e in refs:
        pid = by_key.get(e.key)
        if pid and pid not in profile.participant_ids:
            profile.participant_ids.append(pid)
    candidate_ids = [entity_id(agent, e.name, t) for e in refs for t in ENTITY_TYPES]
    found = await store.get_many(agent, candidate_ids) if candidate_ids else {}
    for node in found.values():
        if isinstance(node, Entity):
            profile.entity_ids.append(node.id)
            if canonical_key(node.name) in by_key:
                profile.participant_entity_ids.append(node.id)
            if node.unstable:
                profile.unstable_entities.append(node.name)
    profile.seed_ids = list(dict.fromkeys([*profile.participant_ids, *profile.entity_ids]))
    window = resolve_temporal(query, ref)
    if window is not None:
        profile.temporal_window = (window.lo, window.hi)
        profile.temporal_granularity = window.granularity
    profile.expected_answer_type = predict_answer_type(query)
    profile.keywords = extract_keywords(analysis)
    profile.facets = profile.entity_refs or profile.keywords[: tuning.facet_keywords]
    texts: dict[str, str] = {"original": query}
    for v in wanted:
        if v == "keywords" and profile.keywords:
            texts["keywords"] = " ".join(profile.keywords)
        elif v == "declarative" and (d := _declarative(analysis)):
            texts["declarative"] = d
        elif v == "type_anchored" and profile.expected_answer_type and profile.entity_refs:
            texts["type_anchored"] = " ".join([*profile.entity_refs, profile.expected_answer_type])
    seen: dict[str, str] = {}
    for name, text in texts.items():
        if text not in seen.values():
            seen[name] = text
    profile.variants = list(seen.items())
    for pid, text in stripped.items():
        if pid in profile.participant_ids:
            words = {w.casefold() for w in _WORD.findall(text)}
            kept = [k for k in profile.keywords if k.casefold() in words]
            profile.without_name[pid] = (" ".join(kept), None)
    return IntentDraft(profile, original_vec, list(stripped), embedder)


async def _embed(embedder: Any, texts: list[str]) -> np.ndarray | None:
    """Query vectors, or None: an embedder failure leaves BM25-only recall, never an error."""
    if embedder is None:
        return None
    try:
        return np.asarray(await embedder.embed_queries(texts))
    except Exception as exc:  # the type only: provider messages may echo request details
        log.warning("query embedding failed (%s); recalling with keyword search only", type(exc).__name__)
        return None
