"""Compiled lists: what someone has done or has, of one kind, as one statement.

"What activities does Melanie do?", "Which books has Jon read?", "What pets does Caroline have?"
are answered by a dozen turns spread over months; no single turn, statement or Fact holds the
answer, so a retriever must find every one of them. A compiled list holds them in one line::

    Melanie's activities: camping (June 2023), pottery (July 2023), hiking (July 2023)

Each consolidation cycle reads its Observations with the rules below (a list of small functions,
each with a name and the reason it exists: the first that reads a statement decides). A statement
adds an item only when its subject is the owner by name, it says something done or had (not a
plan, a wish, a negation or someone else's act: ``list_lexicon.NOT_DONE``), and its words name a
thing of the kind (``list_lexicon``). The list of each (owner, kind, visibility) the cycle touched
is then rebuilt from its earlier sources and the new ones and, when its items changed, written as a
new version: a Fact whose ``text`` is the line, SUPPORTED_BY the Observations whose own words
carry an item (honest provenance: the list cites only turns whose content it holds), the earlier
version closed at the new one's time (``LIST_REVISED``), so a recall as of a past moment reads the
list as it stood then. An Observation that was forgotten or superseded no longer counts.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

import numpy as np

from ..config import ConsolidationConfig
from ..model import Direction, Edge, EdgeType, Fact, Observation, Tier, make_id, stable_hash
from ..model.nodes import LIST_SOURCE_RULE
from ..store.filters import Eq, In
from ..store.protocol import Store
from . import list_lexicon as lex
from .plan import subject_key

#: ``invalidation_reason`` of a list version a newer one replaced.
LIST_REVISED = "list revised"
#: ``source_rule`` of a compiled list's Fact.
LIST_RULE = LIST_SOURCE_RULE

#: The label a kind's line shows after the owner's name.
LABELS = {
    "activity": "activities",
    "instrument": "instruments played",
    "pet": "pets",
    "book": "books read",
    "place": "places visited",
    "event": "events attended",
    "made": "things made",
}

_NAME = re.compile(r"^[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}$")
_AND_NAME = re.compile(r"^(?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}) (?:and|&) ")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_TITLE = re.compile(r"^(?:[A-Z0-9][\w'’:-]*)(?: (?:[A-Z0-9][\w'’:-]*|of|the|a|an|and|in|on|to|for|with))*$")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]+(?: (?:[A-Z][\w'’-]+|of|de|del|la|le|du))*")
_NAMED = re.compile(r"\b(?:named|called) (?P<name>[A-Z][\w'-]+)")
_CLAUSE_LEADS = ("that ", "how ", "what ", "when ", "why ", "where ", "if ", "whether ")
_PREPS = frozenset(
    {"with", "for", "at", "in", "on", "to", "from", "about", "during", "after", "before", "by"}
)
#: Forms that also name a thing ("that painting", "a drawing"): an activity only without a determiner.
_THING_FORMS = frozenset({"painting", "drawing", "reading", "writing", "sketch", "paint", "garden", "camp"})
_DETERMINERS = frozenset(
    {"a", "an", "the", "that", "this", "my", "his", "her", "their", "our", "your", "its"}
)
#: "run" with an object is managing something ("runs a bakery"), unless the object is a race.
_RACE_WORDS = frozenset({"race", "marathon", "half-marathon", "5k", "10k", "mile", "miles", "km", "trail"})


@dataclass(frozen=True)
class ListEntry:
    """One item a statement adds to its owner's list of one kind."""

    owner: str
    owner_key: str
    kind: str
    item: str
    obs: Observation

    @property
    def item_key(self) -> str:
        return " ".join(self.item.casefold().split())


@dataclass(frozen=True)
class Reading:
    """What the rules read of one Observation."""

    obs: Observation
    owner: str
    parts: tuple[str, ...]  # the predicate's words ("enjoy", "hike", "in")
    obj: str

    @property
    def predicate(self) -> str:
        """The predicate, normalised ("go_to", "be_fan_of"): what the verb lists hold."""
        return "_".join(self.parts)

    @property
    def verb_text(self) -> str:
        return " ".join(self.parts)

    @property
    def words(self) -> str:
        return f"{self.verb_text} {self.obj}".strip()


def owner_of(subject: str) -> str | None:
    """The person or thing a statement is about, by name: "Melanie", or "Melanie" of "Melanie and
    the kids" (a thing done together was done by each); a possession or a common noun is nobody."""
    subject = subject.strip()
    if "'s" in subject or "’s" in subject:
        return None
    if _NAME.match(subject):
        return subject
    m = _AND_NAME.match(subject)
    return m.group("name") if m else None


def read(obs: Observation) -> Reading | None:
    """The statement as the rules see it; None when it cannot add to any list (no named subject,
    a negation, a plan or a wish)."""
    if obs.redacted or obs.superseded_at is not None or not obs.subject or not obs.predicate:
        return None
    owner = owner_of(obs.subject)
    if owner is None:
        return None
    parts = tuple(p for p in obs.predicate.casefold().split("_") if p)
    if not parts or any(p in lex.NOT_DONE for p in parts):
        return None
    if any(f"{a}_{b}" in lex.NOT_DONE for a, b in pairwise(parts)):
        return None
    text = f" {obs.content.casefold()} "
    if " no longer " in text or " never " in text or " not " in text or "n't " in text:
        return None
    obj = (obs.object or "").strip()
    if obj.casefold().startswith(_CLAUSE_LEADS):
        return None
    return Reading(obs=obs, owner=owner, parts=parts, obj=obj)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'’+-]+", text.casefold())


def _find_forms(words: list[str], forms: dict[str, str] | frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, form) of each lexicon phrase in ``words`` (longest first, no overlaps)."""
    found: list[tuple[int, int, str]] = []
    taken: set[int] = set()
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            span = set(range(i, i + n))
            phrase = " ".join(words[i : i + n])
            if phrase in forms and not span & taken:
                found.append((i, i + n, phrase))
                taken |= span
    return sorted(found)


def strip_leads(item: str) -> str:
    item = item.strip(" ,.;:!?\"'“”")
    changed = True
    while changed:
        changed = False
        for lead in lex.ITEM_LEADS:
            if item.casefold().startswith(lead) and len(item) > len(lead):
                item, changed = item[len(lead) :], True
    return item.strip()


def _noun_phrase(obj: str, max_words: int = 6) -> str:
    """The object up to its first preposition or comma, without its leading determiners."""
    out: list[str] = []
    for w in strip_leads(obj.split(",")[0]).split():
        if w.casefold() in _PREPS and out:
            break
        out.append(w)
    return " ".join(out[:max_words])


# ------------------------------------------------------------------------------------- rules
def instrument(r: Reading) -> list[tuple[str, str]]:
    """Playing, learning or practising an instrument: "plays the clarinet", "is learning piano"."""
    if not set(r.parts) & {"play", "learn", "practice", "practise", "take", "pick", "start"}:
        return []
    return [("instrument", form) for _, _, form in _find_forms(_words(r.obj), lex.INSTRUMENTS)]


def pet(r: Reading) -> list[tuple[str, str]]:
    """Having or getting an animal: "got another cat named Bailey", "adopted a puppy"."""
    if r.predicate not in lex.PET_VERBS and not set(r.parts) & {"adopt", "rescue"}:
        return []
    forms = _find_forms(_words(r.obj), lex.PETS)
    if not forms:
        return []
    named = _NAMED.search(r.obj) or _NAMED.search(r.obs.content)
    if named and len(forms) == 1:
        return [("pet", f"{named.group('name')} the {forms[0][2]}")]
    return [("pet", form) for _, _, form in forms]


def book(r: Reading) -> list[tuple[str, str]]:
    """Reading a titled book: 'loved reading "Charlotte's Web"', "finished The Lean Startup"."""
    if not set(r.parts) & {"read", "reread", "finish"}:
        return []
    titles = [t.strip() for t in _QUOTED.findall(r.obs.content)]
    if not titles:  # an unquoted title, or one whose closing quote the statement lost
        candidate = strip_leads(r.obj.strip("\"“”'"))
        if _TITLE.match(candidate) and len(candidate.split()) >= 2 and r.owner not in candidate:
            titles = [candidate]
    return [("book", t) for t in titles if t]


def place(r: Reading) -> list[tuple[str, str]]:
    """Travelling to a named place: "visited Paris", "took a trip to Rome", "went to Japan"."""
    core = r.predicate
    travel = core in lex.TRAVEL_VERBS or bool(set(r.parts) & {"visit", "travel", "fly", "tour"})
    if not travel and not (core in {"take", "go_on", "have"} and re.search(r"\btrip to\b", r.obj)):
        return []
    names = [m.group(0) for m in _CAPITALISED.finditer(r.obj)]
    # "Priya's cousin's" owns a place, it is none; nor is the owner, nor an occasion.
    return [
        ("place", n)
        for n in names
        if n != r.owner and not n.endswith(("'s", "’s")) and n.casefold() not in lex.EVENTS
    ]


def event(r: Reading) -> list[tuple[str, str]]:
    """Taking part in an occasion: "attended a poetry reading", "went to the pride parade"."""
    core = r.predicate
    if core not in lex.ATTENDING_VERBS and not set(r.parts) & {"attend", "participate"}:
        return []
    phrase = _noun_phrase(r.obj)
    words = _words(phrase)
    forms = _find_forms(words, lex.EVENTS)
    if not forms:
        return []
    end = forms[-1][1]
    if end != len(words):  # the occasion must head the phrase ("a concert ticket" is a ticket)
        return []
    return [("event", " ".join(phrase.split()[: max(end, 1)]))]


def made(r: Reading) -> list[tuple[str, str]]:
    """Making a thing by hand: "painted a sunset", "baked a pie", "built a bookshelf"."""
    if r.parts[0] not in lex.MAKING_VERBS or not r.obj:
        return []
    thing = _noun_phrase(r.obj, max_words=5)
    if not thing or thing.casefold() in {"it", "them", "one", "something", "some", "more"}:
        return []
    return [("made", thing)]


def activity(r: Reading) -> list[tuple[str, str]]:
    """A pastime named by the verb or the object: "went camping", "took up pottery", "enjoys
    hiking in the mountains", "is a big fan of yoga"."""
    if r.predicate not in lex.DOING_VERBS and r.parts[0] not in lex.DOING_VERBS and r.parts[0] != "be":
        return []
    words = _words(r.words)
    out: list[tuple[str, str]] = []
    verb_len = len(r.parts)
    occasions = {i for a, b, f in _find_forms(words, lex.EVENTS) if " " in f for i in range(a, b)}
    for start, end, form in _find_forms(words, lex.ACTIVITIES):
        if start in occasions:
            continue  # "a poetry reading" is an occasion, not writing or reading
        thing = form in _THING_FORMS and start > 0 and words[start - 1] in _DETERMINERS
        if thing and (end >= len(words) or words[end] in _PREPS):
            continue  # "that painting": an artwork, not the pastime
        if form in {"run", "runs"} and start < verb_len and r.obj and not set(_words(r.obj)) & _RACE_WORDS:
            continue  # "runs a bakery"
        out.append(("activity", lex.ACTIVITIES[form]))
    return out


#: The rules, each adding items of its kind; a statement may add to several kinds.
RULES: tuple[tuple[str, Callable[[Reading], list[tuple[str, str]]]], ...] = (
    ("instrument", instrument),
    ("pet", pet),
    ("book", book),
    ("place", place),
    ("event", event),
    ("made", made),
    ("activity", activity),
)


def entries(obs: Observation) -> list[ListEntry]:
    """Every item one Observation adds to a list."""
    r = read(obs)
    if r is None:
        return []
    seen: set[tuple[str, str]] = set()
    out: list[ListEntry] = []
    for _, rule in RULES:
        for kind, item in rule(r):
            item = item.strip()
            key = (kind, item.casefold())
            if item and key not in seen and len(item) <= 80:
                seen.add(key)
                out.append(ListEntry(r.owner, subject_key(r.owner), kind, item, obs))
    return out


def item_date(obs: Observation) -> datetime:
    """When the item happened: the event the turn dates when that lies before it, else when said."""
    lo = obs.anchor_lo
    return lo if lo is not None and lo <= obs.observed_at else obs.observed_at


# ------------------------------------------------------------------------------------- lists
@dataclass
class CompiledList:
    owner: str
    owner_key: str
    kind: str
    visibility: str
    #: item key -> (shown item, first date, the Observations that carry it, oldest first)
    items: dict[str, tuple[str, datetime, list[Observation]]]

    def line(self, max_items: int) -> str:
        chosen = self.chosen(max_items)
        shown = ", ".join(f"{item} ({date:%B %Y})" for item, date, _ in chosen)
        return f"{self.owner}'s {LABELS[self.kind]}: {shown}"

    def chosen(self, max_items: int) -> list[tuple[str, datetime, list[Observation]]]:
        """The items, oldest first; past ``max_items`` the most recent are kept."""
        ordered = sorted(self.items.values(), key=lambda t: (t[1], t[0].casefold()))
        return ordered[-max_items:]

    def sources(self, max_items: int, per_item: int) -> list[Observation]:
        out: dict[str, Observation] = {}
        for _, _, obs in self.chosen(max_items):
            for o in obs[:per_item]:
                out.setdefault(o.id, o)
        return list(out.values())


def compile_lists(found: Sequence[ListEntry]) -> dict[tuple[str, str, str], CompiledList]:
    lists: dict[tuple[str, str, str], CompiledList] = {}
    for e in found:
        key = (e.owner_key, e.kind, e.obs.visibility)
        cl = lists.setdefault(key, CompiledList(e.owner, e.owner_key, e.kind, e.obs.visibility, {}))
        shown, date, obs = cl.items.get(e.item_key, (e.item, item_date(e.obs), []))
        if e.obs.id not in {o.id for o in obs}:
            obs = sorted([*obs, e.obs], key=lambda o: (item_date(o), o.id))
        cl.items[e.item_key] = (shown, min(date, item_date(e.obs)), obs)
    return lists


ListKey = tuple[str, str, str]  # (owner key, kind, visibility)


async def refresh_lists(
    store: Store,
    cfg: ConsolidationConfig,
    embedder: Any,
    agent: str,
    observations: Sequence[Observation],
    now: datetime,
) -> int:
    """Rebuild the lists the cycle's ``observations`` add to; returns the versions written."""
    fresh = [e for o in observations for e in entries(o)]
    if not fresh:
        return 0
    touched = {_key(e) for e in fresh}
    current = await _current_lists(store, agent, touched)
    fresh_ids = {o.id for o in observations}
    earlier = [e for e in await _earlier_entries(store, agent, current, fresh) if e.obs.id not in fresh_ids]
    merged = compile_lists(earlier + fresh)
    writes: list[tuple[Fact, list[Observation], Fact | None]] = []
    for key in sorted(touched):
        cl, old = merged.get(key), current.get(key)
        if cl is None or len(cl.items) < cfg.list_min_items:
            continue
        fact, sources = _version(agent, cl, cfg)
        if old is None or old.text != fact.text:
            if old is not None and old.valid_from > fact.valid_from:
                fact = fact.model_copy(update={"valid_from": old.valid_from})
            writes.append((fact, sources, old))
    if writes:
        await _write(store, embedder, agent, writes, now)
    return len(writes)


def _key(e: ListEntry) -> ListKey:
    return (e.owner_key, e.kind, e.obs.visibility)


async def _current_lists(store: Store, agent: str, touched: set[ListKey]) -> dict[ListKey, Fact]:
    """The open version of each touched list."""
    owners = tuple(sorted({k[0] for k in touched}))
    flt = In("subject_key", owners) & Eq("source_rule", LIST_RULE) & Eq("valid_to", None)
    current: dict[ListKey, Fact] = {}
    for f in await store.find(agent, Tier.FACT, flt, limit=100_000):
        if isinstance(f, Fact) and not f.redacted and f.category:
            key = (f.subject_key or "", f.category.removeprefix("list:"), f.visibility)
            if key in touched:
                current[key] = f
    return current


async def _earlier_entries(
    store: Store, agent: str, current: dict[ListKey, Fact], fresh: Sequence[ListEntry]
) -> list[ListEntry]:
    """What the touched lists held before this cycle: the items of their open versions' sources,
    or, for a list not written yet (too few items until now, or its line was forgotten), everything
    its owner's statements say."""
    out: list[ListEntry] = []
    if current:
        ids = [f.id for f in current.values()]
        support = await store.neighbors(agent, ids, [EdgeType.SUPPORTED_BY], Direction.OUT)
        nodes = await store.get_many(agent, sorted({e.dst for e in support}))
        out += [e for n in nodes.values() if isinstance(n, Observation) for e in entries(n)]
    unlisted = tuple(sorted({e.owner for e in fresh if _key(e) not in current}))
    if unlisted:
        for n in await store.find(agent, Tier.OBSERVATION, In("subject", unlisted), limit=1_000_000):
            if isinstance(n, Observation):
                out += [e for e in entries(n) if _key(e) not in current]
    return out


def _version(agent: str, cl: CompiledList, cfg: ConsolidationConfig) -> tuple[Fact, list[Observation]]:
    """A list's new version (its id hashes its line) and the Observations it cites."""
    text = cl.line(cfg.list_max_items)
    sources = cl.sources(cfg.list_max_items, cfg.list_sources_per_item)
    fact = Fact(
        id=make_id("fct", agent, "compiled-list", cl.owner_key, cl.kind, cl.visibility, stable_hash(text)),
        agent=agent,
        subject=cl.owner,
        subject_key=cl.owner_key,
        predicate=f"list_{cl.kind}",
        object=", ".join(i for i, _, _ in cl.chosen(cfg.list_max_items)),
        confidence=0.9,
        observation_count=len(sources),
        valid_from=max(item_date(o) for o in sources),
        time_basis="event",
        visibility=cl.visibility,
        text=text,
        source_rule=LIST_RULE,
        category=f"list:{cl.kind}",
    )
    return fact, sources


async def _write(
    store: Store,
    embedder: Any,
    agent: str,
    writes: Sequence[tuple[Fact, list[Observation], Fact | None]],
    now: datetime,
) -> None:
    """One unit: each new version with its vector, SUPPORTED_BY and ABOUT edges; the version it
    replaces closed. A version one of whose sources was forgotten meanwhile is not written."""
    vectors: list[np.ndarray | None] = [None] * len(writes)
    if embedder is not None:
        vecs = await embedder.embed_documents([f.text or "" for f, _, _ in writes])
        vectors = [np.asarray(v, dtype=np.float32) for v in vecs]
    about = await _owner_nodes(store, agent, [(f, s) for f, s, _ in writes])
    async with store.unit(agent) as u:
        for (fact, sources, old), vec in zip(writes, vectors, strict=True):
            live = await store.get_many(agent, [o.id for o in sources])
            if any(not isinstance(live.get(o.id), Observation) or live[o.id].redacted for o in sources):
                continue
            u.put(fact, vec)
            for o in sources:
                u.put_edge(Edge(type=EdgeType.SUPPORTED_BY, src=fact.id, dst=o.id, props={"weight": 1.0}))
            for t in about.get(fact.id, []):
                u.put_edge(Edge(type=EdgeType.ABOUT, src=fact.id, dst=t))
            if old is not None and old.id != fact.id:
                update = {
                    "valid_to": fact.valid_from,
                    "invalidation_reason": LIST_REVISED,
                    "invalidated_at": now,
                }
                u.put(old.model_copy(update=update))


async def _owner_nodes(
    store: Store, agent: str, writes: Sequence[tuple[Fact, list[Observation]]]
) -> dict[str, list[str]]:
    """The participant or entity node each list is about: an ABOUT target of its sources named as
    its owner."""
    obs_ids = sorted({o.id for _, s in writes for o in s})
    edges = await store.neighbors(agent, obs_ids, [EdgeType.ABOUT], Direction.OUT)
    targets = sorted({e.dst for e in edges if e.dst.startswith(("ent_", "par_"))})
    nodes = await store.get_many(agent, targets)
    names = {nid: subject_key(getattr(n, "name", "") or "") for nid, n in nodes.items()}
    of_obs: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        of_obs[e.src].add(e.dst)
    out: dict[str, list[str]] = {}
    for fact, sources in writes:
        out[fact.id] = sorted(
            {t for o in sources for t in of_obs.get(o.id, ()) if names.get(t) == fact.subject_key}
        )
    return out
