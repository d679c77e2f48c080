"""Small, hand-written conversations for the recall tests, and helpers to build memories from them.

Every memory uses the fake bag-of-words embedder (no ONNX load; texts that share words are close)
and the process-wide spaCy pipeline, so building one costs well under a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.ingest._support import open_uni
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Message, Node, Tier, Viewer
from uniko_memory.recall import ContextBundle
from uniko_memory.tokens import count_tokens

AGENT = "a"
S1_START = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)
S2_START = datetime(2023, 6, 20, 10, 0, tzinfo=UTC)
S3_START = datetime(2023, 8, 15, 18, 0, tzinfo=UTC)
#: Both gates unreachable: every recall runs all three phases (chunks included).
#: The coverage gates never pass: every recall runs all three phases.
GATES_OFF: dict[str, Any] = {"phase1_coverage_gate": 1.0, "phase2_coverage_gate": 1.0}
ALL_PHASES: dict[str, Any] = {"phases": GATES_OFF}
#: No consolidation cycle on its own (after 20 observations): a memory has Facts only when a test
#: asks for them (``build(..., consolidate=True)``), so every build is deterministic.
NO_AUTO_CONSOLIDATION: dict[str, Any] = {"pipeline": {"consolidation_threshold": 1_000_000}}


@dataclass(frozen=True)
class Line:
    session: str
    sender: str
    text: str
    at: datetime
    visibility: str = "public"
    category: str | None = None


def _session(name: str, start: datetime, turns: Sequence[tuple[str, str]], step: int = 2) -> list[Line]:
    return [Line(name, who, text, start + timedelta(minutes=step * i)) for i, (who, text) in enumerate(turns)]


#: Three sessions, three people, dates a few weeks apart (LoCoMo-like small talk).
MAIN: list[Line] = [
    *_session(
        "s1",
        S1_START,
        [
            ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
            ("Melanie", "That is wonderful Caroline! I took my kids to a pottery workshop on Saturday."),
            ("Caroline", "My cat Oliver knocked over my sunflower painting this morning."),
            ("Melanie", "I am painting a sunrise over Lake Tahoe for my art class."),
            ("Caroline", "I am researching adoption agencies because I want to be a mom."),
            ("Melanie", "You will be a great mom, Caroline. Adoption is a beautiful path."),
            ("Caroline", "The support group meets every Tuesday evening at the community center."),
            ("Melanie", "My husband Mark built a treehouse for the kids in our backyard."),
        ],
    ),
    *_session(
        "s2",
        S2_START,
        [
            ("Caroline", "I adopted a second cat named Bailey from the shelter in Boston."),
            ("Melanie", "We went camping at Yosemite with the kids and saw a black bear."),
            ("Caroline", "I started a counseling certificate program at Boston University."),
            ("Melanie", "My daughter Ava learned to play the violin this spring."),
            ("Caroline", "Bailey sleeps on my keyboard while I study counseling theory."),
            ("Melanie", "Mark and I are repainting the kitchen a pale yellow."),
            ("Caroline", "The counseling program has a practicum at a youth shelter."),
        ],
    ),
    *_session(
        "s3",
        S3_START,
        [
            ("Jon", "I opened my dance studio downtown and the first class was salsa."),
            ("Caroline", "Congrats Jon! I gave a talk at the high school about transgender rights."),
            ("Jon", "Thanks Caroline, the dance studio already has forty students."),
            ("Melanie", "Ava played violin at the summer recital and got a standing ovation."),
            ("Jon", "My salsa partner Gina moved to Miami so I teach the class alone now."),
            ("Caroline", "I might bring the youth shelter kids to a salsa class at your studio."),
        ],
    ),
]


async def build(
    lines: Iterable[Line],
    *,
    agent: str = AGENT,
    uni: Uniko | None = None,
    finalize: bool = True,
    consolidate: bool = False,
    config: dict[str, Any] | None = None,
) -> Uniko:
    """A fresh in-memory engine (or ``uni``) holding ``lines`` for ``agent``, flushed, finalised and,
    when asked, consolidated once."""
    uni = uni or await open_uni(config if config is not None else NO_AUTO_CONSOLIDATION)
    ag = uni.agent(agent)
    sessions: list[str] = []
    for line in lines:
        extra: dict[str, Any] = {"visibility": line.visibility}
        if line.category:
            extra["category"] = line.category
        await ag.session(line.session).observe(
            Turn(sender=line.sender, content=line.text, at=line.at, **extra)
        )
        if line.session not in sessions:
            sessions.append(line.session)
    await ag.flush(timeout=60)
    if finalize:
        for s in sessions:
            await ag.session(s).finalize()
    if consolidate:
        stats = await ag.consolidate()
        assert stats is not None and stats.facts_created > 0
    return uni


async def message_by_text(uni: Uniko, text: str, agent: str = AGENT) -> Message:
    found = [
        m
        for m in await uni.kb.store.find(agent, Tier.MESSAGE, limit=10_000, include_redacted=True)
        if isinstance(m, Message) and m.content == text
    ]
    assert len(found) == 1, f"expected one message {text!r}, found {len(found)}"
    return found[0]


async def nodes_of(uni: Uniko, bundle: ContextBundle, agent: str = AGENT) -> dict[str, Node]:
    """The stored node behind every item of ``bundle``."""
    return await uni.kb.store.get_many(agent, [i.node_id for i in bundle.items])


def rendered_tokens(bundle: ContextBundle, *, header: bool = True) -> int:
    """Tokens of the text the prompt gets: ``bundle.render()`` counted whole."""
    return count_tokens(bundle.render(header=header))


def source_ids(bundle: ContextBundle) -> set[str]:
    return {m for item in bundle.items for m in item.message_ids()}


def viewer(pid: str) -> Viewer:
    return Viewer(participant_id=pid)
