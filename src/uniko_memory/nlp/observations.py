"""P3 observation extraction: third-person statements from a conversation turn (design §3.3).

The default extractor is rule-based and LLM-free: dependency-parse templates over spaCy docs
(the :mod:`uniko_memory.nlp.observation` package). An optional :class:`LlmObservationExtractor` sits
behind the same :class:`ObservationExtractor` protocol for callers who accept an LLM call.

Choices worth knowing:

* **Pronouns.** First person (I, me, my, mine, myself) is the speaker; second person is the
  addressee (a statement that needs an addressee is dropped when there is none); third person
  (he/she/it/they and their forms) is the newest compatible antecedent in the sentence, else the
  most salient live one in the session's :class:`PronounState` (gender from kinship nouns; "it"
  and "they" look back two sentences, people six; subjects and objects outrank other mentions;
  in object positions only people are trusted). A pronoun that stays unresolved drops the
  statement, or only the modifier clause holding it ("... just to see how others like it"), and
  stays the referent of its sentence: a later pronoun resolves to nothing rather than to the next
  noun down ("Is it near the station? -- Yes, it opens at nine"). A thing the speaker says they
  adopted, bought or got is theirs ("I adopted a grey cat. Her name is Mochi" -> "Priya's grey
  cat's name is Mochi").
  Dummy "it" ("it's great to be back", "it sucks when ...", "worth it", "made it") is kept as is.
* **"We".** we/us/our are read as the speaker: the speaker is part of the group, so "We went
  camping" -> "Melanie went camping" stays true of them (less specific, confidence -0.1);
  group-only statements ("we all ...", "each other") are dropped. Reflexive "myself" renders as
  "themselves" (the speaker's gender is unknown).
* **Possessives.** "my sister" -> "Caroline's sister", "his car" -> "Jon's car".
* **Tense and agreement.** The original tense is kept; present first/second person is made third
  person singular ("I am" -> "is", "I've been" -> "has been", "I love" -> "loves", "don't" ->
  "does not"). Contractions are spelled out.
* **Dates.** Relative phrases found by :func:`uniko_memory.nlp.temporal.find_temporal_phrases`
  are rewritten absolutely ("yesterday" -> "on 7 May 2023", "in the last month" -> "in April
  2023"); the first one in a statement becomes its ``temporal_phrase`` / ``anchor``.
* **Statements.** One per clause head: the sentence root, each verb coordinated with it (a shared
  subject and auxiliary are repeated) and comma-spliced clauses. Statements about the speaker or
  a third person are stated as facts; statements about the addressee or about a thing are the
  speaker's view and are attributed ("You're so brave" -> "Caroline says Melanie is so brave",
  "The lake was calm" -> "Melanie says the lake was calm"). "Here's a photo of X" becomes
  "<speaker> shares a photo of X". Subject-less chat sentences ("Went hiking yesterday", "Been
  to Rome once", "Can't wait for ...", "Love seeing ...") take the speaker.
* **Consolation.** After sympathy in a turn ("I'm so sorry."), a sentence about something the
  other speaker told ("She had a good long life") is consolation, not a fact: no statement.
* **Rejects.** Questions ("?" or inverted auxiliary, also when the parser left them inside a
  longer sentence), greetings / thanks / pleasantries, sentences under 4 words, imperatives (no
  subject), subordinate fragments ("Since I was 17."), light verbs (do/make/get/have/be/go/take/
  ...) without a complement, pronoun-only objects ("I love it"; a pronoun resolved to people is
  kept), indefinite or demonstrative subjects ("That is awesome").
* **Triple.** ``predicate`` = ``[modal_][not_]lemma[_particle][_to_lemma...][_prep]`` (see
  :mod:`uniko_memory.nlp.observation.triples`); objects lose leading articles and are cut to their head phrase when
  longer than 20 tokens.
* **Confidence.** 0.8 with an object, 0.6 without; -0.1 each for a resolved-pronoun subject,
  "we", an elided/expletive/existential subject, or reported speech; clamped to [0.3, 0.9];
  "shares" statements get 0.6.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from uniko_memory.nlp.observation.draft import sentence_drafts
from uniko_memory.nlp.observation.filler import DEFAULT_FILLER, Filler, is_condolence
from uniko_memory.nlp.observation.lexicon import ROLE_LABELS
from uniko_memory.nlp.observation.state import SentenceState
from uniko_memory.nlp.observation.types import Antecedent, ObservationDraft, PronounState
from uniko_memory.nlp.observation.words import normalize_name
from uniko_memory.nlp.temporal import find_temporal_phrases

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span

__all__ = [
    "Antecedent",
    "LlmObservationExtractor",
    "ObservationDraft",
    "ObservationExtractor",
    "PronounState",
    "RuleObservationExtractor",
    "extract_observations",
]


def _as_doc(doc_or_analysis: Any) -> Doc | None:
    """The spaCy Doc of an ``Analysis`` (``.doc``, None in rule-fallback mode) or a Doc itself."""
    if hasattr(doc_or_analysis, "sents"):
        return doc_or_analysis
    return getattr(doc_or_analysis, "doc", None)


def extract_observations(
    doc_or_analysis: Any,
    *,
    speaker: str,
    addressee: str | None,
    timestamp: datetime,
    state: PronounState | None = None,
    rejections: list[tuple[str, str]] | None = None,
    filler: Filler | None = None,
) -> list[ObservationDraft]:
    """Third-person observations of one turn, sentence by sentence.

    ``doc_or_analysis`` is a parsed spaCy ``Doc`` or an ``Analysis`` from the NLP pipeline; an
    analysis without a dependency parse (rule-fallback mode) yields nothing. ``timestamp`` is
    the turn's time, used to make relative dates absolute. ``state`` carries third-person
    antecedents across turns of the session; it is updated in place. ``rejections``, when
    given, receives ``(reason, text)`` for every sentence or clause that yielded nothing
    (diagnostics: "question", "filler", "unresolved_pronoun", "light_verb", ...). ``filler``
    adds a deployment's own filler phrases to the built-in ones (``NlpConfig.filler_phrases``).
    """
    doc = _as_doc(doc_or_analysis)
    if doc is None or not doc.has_annotation("DEP"):
        return []
    speaker = person_label(speaker)
    addressee = person_label(addressee) if addressee else addressee
    state = state if state is not None else PronounState()
    drafts: list[ObservationDraft] = []
    seen: set[str] = set()
    consoling = False
    mentioned: set[str] = set()
    for sent in map(after_heading, doc.sents):
        sentence = SentenceState(
            sent=sent,
            speaker=speaker,
            addressee=addressee,
            timestamp=timestamp,
            state=state,
            rejections=rejections,
            filler=filler or DEFAULT_FILLER,
            consoling=consoling,
            turn_mentions=frozenset(mentioned),
        )
        for draft in sentence_drafts(sentence):
            key = draft.content.lower()
            if key not in seen:
                seen.add(key)
                drafts.append(draft)
        consoling = consoling or is_condolence(sent.text)
        mentioned.update(a.text.lower() for _, a in sentence.candidates if not a.unknown)
    return drafts


def after_heading(sent: Span) -> Span:
    """The sentence after a verbless heading and its colon ("Menu update: I've stopped eating
    fish", "Big news: we're engaged"): the parser makes the heading's noun the root and hangs
    the statement under it, where no clause is looked for. The heading itself states nothing."""
    colon = next((t for t in sent if t.text == ":"), None)
    if colon is None or colon.i + 2 >= sent.end:
        return sent
    head = sent.doc[sent.start : colon.i]
    if any(t.pos_ in ("VERB", "AUX") for t in head) or len(head) > 6:
        return sent
    rest = sent.doc[colon.i + 1 : sent.end]
    return rest if any(t.pos_ in ("VERB", "AUX") for t in rest) else sent


def person_label(name: str) -> str:
    """How a statement names a participant: the name, or a role for a pronoun-like id ("me"), so
    a statement never reads "Me's cat is Miso"."""
    return ROLE_LABELS.get(name.strip().casefold(), name)


@runtime_checkable
class ObservationExtractor(Protocol):
    """Turns one turn's text into observation drafts."""

    async def extract(
        self,
        text: str,
        speaker: str,
        addressee: str | None,
        timestamp: datetime,
        state: PronounState | None = None,
    ) -> list[ObservationDraft]:
        """Observations of ``text`` said by ``speaker`` to ``addressee`` at ``timestamp``."""
        ...


class RuleObservationExtractor:
    """The default, LLM-free extractor: parse with ``pipeline`` then apply the templates.

    ``pipeline`` is an ``NlpPipeline`` (anything with ``analyze(list[str]) -> list[Analysis]``)
    or a spaCy ``Language`` (called on the text).
    """

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    def _parse(self, text: str) -> Any:
        analyze = getattr(self._pipeline, "analyze", None)
        if callable(analyze):
            return analyze([text])[0]
        return self._pipeline(text)

    async def extract(
        self,
        text: str,
        speaker: str,
        addressee: str | None,
        timestamp: datetime,
        state: PronounState | None = None,
    ) -> list[ObservationDraft]:
        """Parse ``text`` and extract its observations (CPU-bound; runs inline)."""
        if not text.strip():
            return []
        parsed = self._parse(text)
        return extract_observations(
            parsed, speaker=speaker, addressee=addressee, timestamp=timestamp, state=state
        )


class LlmObservation(BaseModel):
    """One observation as an LLM returns it."""

    content: str = Field(description="A self-contained third-person statement using names, not pronouns.")
    subject: str = Field(description="Who or what the statement is about.")
    predicate: str = Field(description="The relation, as a short snake_case verb phrase (e.g. go_to).")
    object: str | None = Field(default=None, description="The object of the relation, if any.")
    temporal_phrase: str | None = Field(
        default=None,
        description="The time expression exactly as said in the text (e.g. 'yesterday'), if any.",
    )
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)


class LlmObservations(BaseModel):
    """The structured output an :class:`LlmObservationExtractor` asks for."""

    observations: list[LlmObservation] = Field(default_factory=list)


_LLM_PROMPT = (
    "Extract durable facts about the people in this chat turn as third-person statements.\n"
    "Speaker: {speaker}. Addressee: {addressee}. Time of the turn: {timestamp}.\n"
    "Replace I/me/my with the speaker's name and you/your with the addressee's; write absolute dates "
    "instead of relative ones; skip questions, greetings and small talk; never invent facts.\n\n"
    "Turn: {text}"
)


class LlmObservationExtractor:
    """Optional extractor backed by a LangChain chat model with structured output.

    ``chat_model`` is any LangChain ``BaseChatModel`` supporting ``with_structured_output``; the
    model is asked for :class:`LlmObservations`. Anchors come from the returned temporal phrase
    (resolved against the turn's timestamp); ``entities`` are the participants named in the
    statement. ``state`` is accepted for protocol compatibility and left unchanged.
    """

    def __init__(self, chat_model: Any, *, prompt: str = _LLM_PROMPT) -> None:
        self._runnable = chat_model.with_structured_output(LlmObservations)
        self._prompt = prompt

    async def extract(
        self,
        text: str,
        speaker: str,
        addressee: str | None,
        timestamp: datetime,
        state: PronounState | None = None,
    ) -> list[ObservationDraft]:
        """Ask the model for observations of ``text`` and convert them to drafts."""
        if not text.strip():
            return []
        message = self._prompt.format(
            speaker=speaker, addressee=addressee or "unknown", timestamp=timestamp.isoformat(), text=text
        )
        result = await self._runnable.ainvoke(message)
        if isinstance(result, dict):
            result = LlmObservations.model_validate(result)
        if not isinstance(result, LlmObservations):
            return []
        drafts: list[ObservationDraft] = []
        for item in result.observations:
            if not item.content.strip() or not item.subject.strip():
                continue
            anchor = None
            if item.temporal_phrase:
                matches = find_temporal_phrases(item.temporal_phrase, timestamp)
                anchor = matches[0].window if matches else None
            people = [p for p in (speaker, addressee) if p and p.lower() in item.content.lower()]
            drafts.append(
                ObservationDraft(
                    content=item.content.strip(),
                    subject=item.subject.strip(),
                    predicate=item.predicate.strip().lower().replace(" ", "_"),
                    object=item.object.strip() if item.object else None,
                    temporal_phrase=item.temporal_phrase,
                    anchor=anchor,
                    entities=[normalize_name(p) for p in people],
                    sentence=text,
                    confidence=item.confidence,
                )
            )
        return drafts
