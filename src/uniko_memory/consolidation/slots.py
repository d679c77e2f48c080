"""Which attribute a statement gives a value to: the key that lets a newer value supersede an older one.

A *slot* is (attribute, subject): where Maya lives, what Maya eats, whom Leo dates, when Leo's
visit is. Two statements that fill one slot with different values cannot both hold now, whatever
their verbs ("lives in Paris", "moved to Lyon", "since moving to Lyon"), so consolidation closes the
older one (``consolidation.supersede``). A statement fills a slot only when a rule below recognises
it; every other statement is left alone, because closing a true statement is worse than keeping a
stale one marked by its date.

The rules are a list of small functions, each with a name and the reason it exists; the first that
reads a statement decides. Word lists live in ``slot_lexicon``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..model import Observation, normalize_key
from . import slot_lexicon as lex
from .plan import subject_key

_WORD = re.compile(r"[\w'-]+")
_PREPOSITIONS = frozenset({"to", "in", "at", "with", "for", "on", "of", "from", "near", "by"})
_MODALS = frozenset({"will", "would", "can", "could", "may", "might", "must", "shall", "should", "be_going"})
_LEADING = ("the ", "a ", "an ", "my ", "our ", "his ", "her ", "their ", "your ")
_FAVOURITE = re.compile(r"^(?P<owner>.+?)'s (?:new |current |all-time )?fav(?:ou)?rite (?P<thing>[\w -]+)$")
_NEW_EMPLOYER = re.compile(
    r"\bnew (?:job|position|role|post|gig|boss|manager|team|office|employer|colleagues?|workplace)"
    r" (?:at|with|for) (?P<org>[A-Z][\w&.'-]*(?: (?:[A-Z][\w&.'-]*|of|and|&))*)"
)
_SINCE_JOINING = re.compile(
    r"\b(?i:since) (?:\w+ )?(?:joined|joining|started (?:working |work )?(?:at|with|for)"
    r"|starting (?:work(?:ing)? )?(?:at|with|for)) (?P<org>[A-Z][\w&.'-]*(?: [A-Z][\w&.'-]*)*)"
)
_SINCE_MOVING = re.compile(
    r"\b(?i:since) (?:\w+ )?(?:moving|moved|relocating|relocated) (?:back )?to (?P<place>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*)*)"
)
#: The object of "not seeing anyone": nobody in particular.
_ANYONE = frozenset({"anyone", "anybody", "anyone anymore", "anybody anymore", "anyone any more"})
#: Where an object's aside starts: a comma, a semicolon, a colon or a spaced dash.
_ASIDE = re.compile(r"[,;:]| [-–—] ")
_MOVING_TO = re.compile(
    r"^(?:moving|relocating|having moved) (?:back )?(?:to|into) (?P<place>.+)$", re.IGNORECASE
)


@dataclass(frozen=True)
class SlotReading:
    """One statement's value for one slot.

    ``functional``: the attribute holds one value at a time, so any newer different value
    supersedes (where someone lives); otherwise only a newer statement that says it changed does
    (a drink someone "switched to"). ``owner`` / ``detail`` tell events of one kind apart (Leo's
    visit, the trip to Rome). ``object``: the value's words, for a statement whose triple had no
    object (an event's date).
    """

    attribute: str
    subject: str
    value: str
    owner: str = ""
    detail: str = ""
    functional: bool = True
    object: str | None = None

    @property
    def key(self) -> str:
        return f"{self.attribute}/{self.subject}"


@dataclass(frozen=True)
class Statement:
    """What the rules read: the triple (object may be missing) and its Observation."""

    obs: Observation
    subject: str
    predicate: str
    object: str | None

    @property
    def core(self) -> str:
        """The predicate without modal and negation parts ("will_move_to" -> "move_to")."""
        parts = [p for p in self.predicate.split("_") if p]
        while parts and (parts[0] in _MODALS or parts[0] == "not"):
            parts = parts[1:]
        return "_".join(parts)

    @property
    def negated(self) -> bool:
        text = self.obs.content.casefold()
        return "not" in self.predicate.split("_") or " no longer " in f" {text} " or " never " in f" {text} "

    @property
    def words(self) -> set[str]:
        return {w.casefold() for w in _WORD.findall(self.obs.content)}

    @property
    def object_key(self) -> str:
        return strip_leading(normalize_key(self.object or ""))

    @property
    def value_key(self) -> str:
        """The object up to an aside: "vegetarian now, Ifeoma's influence" is "vegetarian now".
        For the rules whose value is one word of a closed list; a comma or dash there starts a
        second thought, not more of the value."""
        return _ASIDE.split(self.object_key, maxsplit=1)[0].strip()


def strip_leading(key: str) -> str:
    for lead in _LEADING:
        if key.startswith(lead) and len(key) > len(lead):
            return key[len(lead) :]
    return key


def person_key(subject: str) -> str:
    """The key of the person a subject names: "Maya's brother Leo" is Leo, "the Maya" is maya."""
    words = subject.split()
    for i in range(len(words) - 2, -1, -1):
        noun = words[i].casefold().removesuffix("'s")
        rest = words[i + 1 :]
        if noun in lex.RELATION_NOUNS and rest and all(w[:1].isupper() for w in rest):
            return subject_key(" ".join(rest))
    return subject_key(subject)


def change_cue(stmt: Statement) -> bool:
    """The statement says its value is new ("now", "switched", "anymore", "since moving")."""
    return bool(stmt.words & lex.CHANGE_CUES)


def _stops(core: str) -> bool:
    """ "stop", "quit", "give_up", "stop_eat" (stopped eating); not "stop_by" or "stop_at"."""
    parts = core.split("_")
    if core in lex.CESSATION_PREDICATES:
        return True
    return (
        len(parts) > 1
        and parts[0] in ("stop", "quit")
        and parts[1] not in _PREPOSITIONS | {"by", "off", "over", "up"}
    )


def cessation_head(stmt: Statement) -> str | None:
    """The thing a statement says stopped ("does not drink coffee anymore", "no longer eats meat",
    "quit smoking"): its object's head word, or None when the statement says no such thing."""
    text = f" {stmt.obs.content.casefold()} "
    if stmt.core in lex.CANCEL_PREDICATES and not stmt.negated and stmt.object_key:
        return stmt.object_key.split()[-1]  # "cancelled the Porto hotel" ends what was booked
    stopped = any(p in text for p in lex.CESSATION_PHRASES) and stmt.negated
    # "quit smoking" stopped; "will not quit" did not (a negated stop is a promise to go on), nor
    # "could stop by" (a stop that is a visit, or only possible)
    stopped = stopped or " no longer " in text
    modal = stmt.predicate.split("_")[0] in _MODALS
    stopped = stopped or (_stops(stmt.core) and not stmt.negated and not modal)
    if not stopped:
        return None
    key = stmt.object_key
    if not key:
        return None
    return key.split()[-1]


# ---------------------------------------------------------------------------------- the rules
def _residence(stmt: Statement) -> SlotReading | None:
    """Where someone lives: one home at a time, so "moved to Lyon" replaces "lives in Paris"; an
    implicit "since moving to Lyon" counts too."""
    place = None
    if stmt.core in lex.RESIDENCE_PREDICATES and stmt.object:
        place = stmt.object_key
    elif stmt.object and (m := _MOVING_TO.match(stmt.object.strip())):
        place = strip_leading(normalize_key(m["place"]))
    elif m := _SINCE_MOVING.search(stmt.obs.content):  # "since moving to Lyon, Maya cycles"
        place = normalize_key(m["place"])
    if not place or stmt.negated:
        return None
    return SlotReading("residence", person_key(stmt.subject), place)


def _employer(stmt: Statement) -> SlotReading | None:
    """Who someone works for: "works at Acme", "joined Acme", "my new boss at Acme" (implicit)."""
    if stmt.negated:
        return None
    if stmt.core in lex.EMPLOYER_PREDICATES and stmt.object:
        if stmt.core == "join" and not stmt.object[:1].isupper():
            return None  # "joined a gym" is not an employer; "joined Acme" is
        org = stmt.object_key
        if org and org not in lex.NOT_EMPLOYERS:
            return SlotReading("employer", person_key(stmt.subject), org)
    if (m := _SINCE_JOINING.search(stmt.obs.content)) is not None:  # "since Maya joined Northwind"
        return SlotReading("employer", person_key(stmt.subject), normalize_key(m["org"]))
    m = _NEW_EMPLOYER.search(stmt.obs.content)
    if m is not None:
        owner = stmt.subject.split("'s ", 1)[0] if "'s " in stmt.subject else stmt.subject
        return SlotReading("employer", person_key(owner), normalize_key(m["org"]))
    return None


def _job(stmt: Statement) -> SlotReading | None:
    """A job title: "works as a nurse", "was promoted to manager", "is a teacher"."""
    if stmt.negated or not stmt.object:
        return None
    key = stmt.object_key
    if stmt.core in lex.JOB_PREDICATES:
        return SlotReading("job", person_key(stmt.subject), key)
    words = key.split()
    named = (
        f" a {key}" in f" {stmt.obs.content.casefold()}" or f" an {key}" in f" {stmt.obs.content.casefold()}"
    )
    # "is a nurse", "became a senior engineer": a job noun as the whole complement, with its article
    if (
        stmt.core in ("be", "become", "be_now")
        and words
        and words[-1] in lex.JOB_NOUNS
        and len(words) <= 3
        and named
    ):
        return SlotReading("job", person_key(stmt.subject), key)
    return None


def _relationship(stmt: Statement) -> SlotReading | None:
    """Whom someone is with: dating, engaged or married to one partner; a break-up ends it, and
    so does "is not seeing anyone (any more)": no partner is a value of the slot too."""
    if stmt.negated:
        nobody = stmt.value_key in _ANYONE and stmt.core in lex.PARTNER_PREDICATES | {"be_with"}
        return SlotReading("partner", person_key(stmt.subject), "single") if nobody else None
    people = [p for p in re.split(r"\s+and\s+", stmt.subject) if p]
    if stmt.core in lex.PARTNER_PREDICATES and stmt.object and stmt.object[:1].isupper():
        return SlotReading("partner", person_key(stmt.subject), person_key(stmt.object))
    if stmt.core in lex.BREAKUP_PREDICATES and len(people) == 1:
        return SlotReading("partner", person_key(stmt.subject), "single")
    if stmt.core in ("be", "be_now", "become", "get") and " ".join(
        w for w in stmt.value_key.split() if w not in lex.DIET_ADVERBS
    ) in (
        "single",
        "divorced",
        "separated",
    ):
        return SlotReading("partner", person_key(stmt.subject), "single")
    return None


def _breakup_pair(stmt: Statement) -> list[SlotReading]:
    """ "Tom and Maya broke up": both are single now."""
    people = [p for p in re.split(r"\s+and\s+", stmt.subject) if p]
    if stmt.negated or stmt.core not in lex.BREAKUP_PREDICATES or len(people) != 2:
        return []
    return [SlotReading("partner", person_key(p), "single") for p in people]


def _diet(stmt: Statement) -> SlotReading | None:
    """A diet: one at a time ("is vegetarian", then "is pescatarian now"). The diet word is the
    whole complement: "made vegan ice cream" says nothing of anyone's diet."""
    if stmt.negated or not stmt.object or stmt.core not in lex.DIET_PREDICATES:
        return None
    words = [w for w in stmt.value_key.split() if w not in lex.DIET_ADVERBS]
    if len(words) != 1 or words[0] not in lex.DIETS:
        return None
    return SlotReading("diet", person_key(stmt.subject), words[0])


def _drink(stmt: Statement) -> SlotReading | None:
    """What someone drinks: a preference, replaced only by a statement that says it changed
    ("switched to tea")."""
    if stmt.negated or not stmt.object:
        return None
    words = stmt.value_key.split()
    if not words or words[-1] not in lex.DRINKS:
        return None
    verbs = {
        "drink",
        "love",
        "like",
        "prefer",
        "enjoy",
        "switch_to",
        "change_to",
        "go_back_to",
        "be_into",
        "order",
    }
    if stmt.core not in verbs:
        return None
    return SlotReading("drink", person_key(stmt.subject), words[-1], functional=False)


def _favourite(stmt: Statement) -> SlotReading | None:
    """ "X's favourite Y is Z": one favourite at a time."""
    m = _FAVOURITE.match(stmt.subject.strip())
    if m is None or stmt.core not in ("be", "be_now") or not stmt.object or stmt.negated:
        return None
    return SlotReading(f"favourite {normalize_key(m['thing'])}", person_key(m["owner"]), stmt.object_key)


def _count(stmt: Statement) -> SlotReading | None:
    """How many of a thing someone has ("has two cats" then "has three cats")."""
    if stmt.negated or stmt.core not in ("have", "have_got", "own", "now_have") or not stmt.object:
        return None
    key = stmt.object_key
    m = re.match(r"^(\d+|[a-z]+(?: (?:couple|few) of)?) (?:\w+ )?(\w+)$", key)
    if m is None:
        return None
    amount = m[1]
    number = int(amount) if amount.isdigit() else lex.NUMBER_WORDS.get(amount)
    if number is None or amount in ("a", "an"):
        return None
    noun = m[2]
    noun = "child" if noun == "children" else noun.removesuffix("s") if len(noun) > 3 else noun
    return SlotReading(f"count of {noun}", person_key(stmt.subject), str(number))


def parse_event(phrase: str) -> tuple[str, str, str] | None:
    """(owner, event, detail) of an event phrase: "Leo's visit" → ("leo", "visit", ""), "the trip
    to Rome" → ("", "trip", "rome"); None when the phrase names no event."""
    key = strip_leading(normalize_key(phrase))
    owner = ""
    if "'s " in key:
        owner, key = key.rsplit("'s ", 1)
        owner = person_key(owner)
    words = key.split()
    cut = next((i for i, w in enumerate(words) if w in _PREPOSITIONS), len(words))
    main, detail = words[:cut], words[cut + 1 :]
    if not main or main[-1] not in lex.EVENTS:
        return None
    return owner, main[-1], " ".join(detail)


def _date_label(obs: Observation) -> str | None:
    if obs.anchor_lo is None:
        return None
    gran = obs.anchor_granularity or "day"
    if gran not in ("day", "week", "weekend", "month"):
        return None
    return f"{obs.anchor_lo.date().isoformat()}/{gran}"


def _event(stmt: Statement) -> SlotReading | None:
    """When an event happens ("Leo is visiting on 12 July", "the visit moved to 19 July") or that
    it was cancelled ("the trip is off", "we called off the wedding"): one date at a time."""
    if stmt.core in lex.CANCEL_PREDICATES:
        for phrase in (stmt.object, stmt.subject):
            parsed = parse_event(phrase) if phrase else None
            if parsed is not None and not stmt.negated:
                owner, event, detail = parsed
                return SlotReading("date", event, "cancelled", owner=owner, detail=detail, object="cancelled")
        return None
    label = _date_label(stmt.obs)
    if label is None or stmt.negated:
        return None
    parsed = parse_event(stmt.subject)
    verb = stmt.core.split("_")[0]
    dateless = not stmt.object or stmt.object == stmt.obs.temporal_phrase
    if parsed is None and verb in lex.EVENT_VERBS and dateless:
        parsed = (person_key(stmt.subject), lex.EVENT_VERBS[verb], "")
    elif parsed is None or stmt.core not in lex.DATE_PREDICATES:
        return None
    owner, event, detail = parsed
    words = stmt.obs.temporal_phrase or label.split("/")[0]
    return SlotReading("date", event, label, owner=owner, detail=detail, object=stmt.object or words)


@dataclass(frozen=True)
class SlotRule:
    name: str
    read: Callable[[Statement], SlotReading | None]


#: The rules in order; the first that reads a statement decides its slot.
SLOT_RULES: tuple[SlotRule, ...] = (
    SlotRule("event", _event),
    SlotRule("residence", _residence),
    SlotRule("employer", _employer),
    SlotRule("job", _job),
    SlotRule("relationship", _relationship),
    SlotRule("diet", _diet),
    SlotRule("drink", _drink),
    SlotRule("favourite", _favourite),
    SlotRule("count", _count),
)


def read_slots(obs: Observation, subject: str, predicate: str, obj: str | None) -> list[SlotReading]:
    """The slots one statement fills (usually none, at most one per person it is about)."""
    if not subject or not predicate:
        return []
    stmt = Statement(obs, subject, predicate, obj)
    pair = _breakup_pair(stmt)
    if pair:
        return pair
    for rule in SLOT_RULES:
        try:
            reading = rule.read(stmt)
        except (ValueError, IndexError):  # a rule never fails a cycle
            reading = None
        if reading is not None and reading.subject and reading.value:
            return [reading]
    return []
