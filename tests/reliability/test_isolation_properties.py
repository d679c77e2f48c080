"""Isolation and visibility, as properties: whatever agents, sessions, participants, visibilities,
writes, deletions, redactions, consolidations, sweeps and answers happen, no read path returns a node
of another agent, a node the viewer may not see, or anything of a forgotten turn.

Every turn carries one marker word (``read_paths.marker``); the ``Oracle`` records each marker's
agent, visibility and whether its turn was forgotten, and ``read_paths.audit`` checks what every
read path returns against it. A hypothesis state machine interleaves the operations on the embedded
store and on the Weaviate double (derandomised, so CI sees the same runs); one test per read path
checks it on a fixed world (and that it reaches live memory at all, so a clean result means
something); names said only in private turns are checked separately (an Entity is as private as
the turns that name it); the coverage test fails when a read method of the Store protocol, the facade
or an integration has no read path.

The state machine does not shrink (see its settings): a failure prints the run as it happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.reliability.read_paths import (
    NOT_READS,
    READ_PATHS,
    SCAN,
    EchoChat,
    Mark,
    Oracle,
    Probe,
    ReadPath,
    Seen,
    api_read_surface,
    audit,
    covered,
    marker,
    of_bundle,
    uncovered,
)
from uniko_memory.errors import NotFound
from uniko_memory.ingest import Turn
from uniko_memory.model import Tier, Viewer, message_id
from uniko_memory.store.filters import Eq

if TYPE_CHECKING:
    from tests.reliability.conftest import Backend

T = TypeVar("T")

AGENTS = ("a1", "a2", "a3")
PEOPLE = ("Ana", "Ben", "Cyd")
VISIBILITIES = (
    "public",
    "",
    "private:Ana",
    "private:Ben",
    "private:Cyd",
    "team:red",
    "team:blue",
    "org:acme",
)
VIEWERS = (
    None,
    Viewer(participant_id="Ana", teams=frozenset({"red"})),
    Viewer(participant_id="Ben", orgs=frozenset({"acme"})),
    Viewer(participant_id="Cyd", teams=frozenset({"blue"})),
    Viewer(participant_id="Dee"),
)
#: Turn texts: the marker is the one word only this turn says, and lands in an observation's
#: object, subject or predicate; the names make entities, topics and graph edges; the dates feed the
#: temporal channel.
TEMPLATES = (
    "I adopted a grey cat named {m} in Paris with Melanie.",
    "My kayak {m} is moored at Lake Tahoe near the Google office.",
    "My sister {m} works at Google in Paris.",
    "Melanie and I painted a {m} sunrise at Lake Tahoe yesterday.",
    "Last week I went to the {m} support group with Jon.",
    "My friend {m} bought a new paddle for my kayak last week.",
)
QUESTIONS = (
    "What did Ana adopt?",
    "Where is the kayak moored?",
    "Who works at Google in Paris?",
    "What happened at Lake Tahoe?",
    "What did Ben buy last week?",
)
#: A turn long enough to be stored with passages (its ``message`` chunks, searched and quoted on
#: their own: ``recall.passages``), with its marker in a passage in the middle.
LONG_TEMPLATE = "\n\n".join(
    [
        " ".join(f"The river barge number {i} carried grain past the old mill." for i in range(60)),
        "My kayak {m} is moored at Lake Tahoe near the Google office.",
        " ".join(f"The harbour crane number {i} lifted timber onto the quay." for i in range(60)),
    ]
)
T0 = datetime(2023, 5, 7, 9, 0, tzinfo=UTC)
LG_NAMESPACE = "lg"


class World:
    """A memory under test and the model of what it holds, driven on a private event loop."""

    def __init__(self, backend: Backend) -> None:
        self.loop = asyncio.new_event_loop()
        self.uni, self._close = self.run(backend.open())
        if hasattr(self.uni, "set_chat_model"):  # sweeps write abstractive summaries with this model
            self.uni.set_chat_model(EchoChat())
        self.oracle = Oracle()
        self.issued = 0

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        try:
            self.run(self._close())
        finally:
            self.loop.close()

    # ------------------------------------------------------------------ writes, mirrored in the model
    def _mark(self, agent: str, visibility: str, session: str, turn_id: str, sender: str) -> str:
        word = marker(self.issued)
        self.issued += 1
        self.oracle.marks[word] = Mark(agent, visibility, session, turn_id, sender)
        if session:
            self.oracle.sessions.setdefault(agent, set()).add(session)
        return word

    async def observe(
        self, agent: str, session: int, sender: str, template: int | str, visibility: str, to: str
    ) -> str:
        """One turn; ``template`` indexes ``TEMPLATES`` or is a text with ``{m}`` (the marker) or
        ``{M}`` (the marker as a name)."""
        tid = f"t{self.issued}"
        ses = f"{agent}-s{session}"
        word = self._mark(agent, visibility, ses, tid, sender)
        text = TEMPLATES[template] if isinstance(template, int) else template
        turn = Turn(
            id=tid,
            sender=sender,
            content=text.format(m=word, M=word.capitalize()),
            at=T0 + timedelta(hours=3 * self.issued),
            addressed_to=[to] if to != sender else [],
            visibility=visibility,
        )
        await self.uni.agent(agent).session(ses).observe(turn)
        return word

    async def ingest_artifact(self, agent: str, template: int, visibility: str) -> str | None:
        handle = self.uni.agent(agent)
        if not hasattr(handle, "ingest_artifact"):
            return None
        word = self._mark(agent, visibility, "", f"artifact{self.issued}", "")
        self.oracle.marks[word].kind = "artifact"
        text = f"Field notes. {TEMPLATES[template].format(m=word)}"
        await handle.ingest_artifact(
            text.encode(), title="notes", mime_type="text/plain", visibility=visibility
        )
        return word

    def live(self, agent: str | None = None) -> list[str]:
        """Live turns (of ``agent``), by marker: what forget_turn / delete_turn may pick."""
        return sorted(
            w
            for w, m in self.oracle.marks.items()
            if m.live and m.kind == "turn" and (agent is None or m.agent == agent)
        )

    async def forget_turn(self, word: str, hard: bool) -> None:
        m = self.oracle.marks[word]
        handle = self.uni.agent(m.agent)
        await (handle.delete_turn if hard else handle.forget_turn)(m.session, m.turn_id)
        m.live = False

    async def forget_participant(self, agent: str, person: str, hard: bool) -> None:
        try:
            await self.uni.agent(agent).forget_participant(person, hard=hard)
        except NotFound:  # never a participant of this agent: nothing to forget
            assert not any(
                m.live and m.agent == agent and m.sender == person for m in self.oracle.marks.values()
            )
            return
        for m in self.oracle.marks.values():
            if m.agent == agent and m.sender == person:
                m.live = False

    def _lg(self, agent: str) -> Any:
        from langchain_uniko import UnikoStore

        return UnikoStore(self.uni, agent_id=agent)

    async def lg_put(self, agent: str, key: str) -> str:
        ns = f"{agent}-{LG_NAMESPACE}"
        n_versions = sum(1 for m in self.oracle.marks.values() if m.session == ns and f":{key}" in m.turn_id)
        tid = f"lg:{ns}:{key}" + (f"#{n_versions + 1}" if n_versions else "")
        word = self._mark(agent, "public", ns, tid, "user")
        await self._lg(agent).aput((ns,), key, {"content": f"Remember the {word} code of the kayak locker."})
        return word

    async def lg_delete(self, agent: str, key: str) -> None:
        ns = f"{agent}-{LG_NAMESPACE}"
        await self._lg(agent).aput((ns,), key, None)
        for m in self.oracle.marks.values():
            if m.session == ns and m.turn_id.split("#")[0] == f"lg:{ns}:{key}":
                m.live = False

    async def settle(self) -> None:
        for a in AGENTS:
            await self.uni.agent(a).flush()

    # ------------------------------------------------------------------ reads
    async def probe(self, agent: str, viewer: Viewer | None, query: str) -> Probe:
        await self.settle()
        store = self.uni.kb.store
        first: list[str] = []  # ids that must not come back: other agents', forgotten ones
        rest: list[str] = []
        for a in AGENTS:
            for t in Tier:
                for n in await store.find(a, t, limit=SCAN, include_redacted=True):
                    (first if a != agent or n.redacted else rest).append(n.id)
        first += [message_id(m.agent, m.turn_id) for m in self.oracle.marks.values() if not m.live]
        return Probe(
            uni=self.uni,
            agent=agent,
            viewer=viewer,
            query=query,
            probe_ids=tuple(dict.fromkeys(first + rest)),
            hostile=tuple(self.oracle.hostile(agent, viewer)),
            sessions=tuple(sorted(self.oracle.sessions.get(agent, ()))),
            participants=PEOPLE,
        )

    async def audit(
        self, agent: str, viewer: Viewer | None, query: str, names: Sequence[str] | None = None
    ) -> tuple[list[str], dict[str, int]]:
        """Findings of the named read paths (all by default), and how much each returned."""
        p = await self.probe(agent, viewer, query)
        bad: list[str] = []
        counts: dict[str, int] = {}
        for name in names or sorted(READ_PATHS):
            found, n = await audit(READ_PATHS[name], p, self.oracle)
            bad += found
            counts[name] = n
        return bad, counts


def report(bad: list[str]) -> str:
    shown = "\n  ".join(bad[:40])
    return f"{len(bad)} finding(s):\n  {shown}" + ("\n  ..." if len(bad) > 40 else "")


# --------------------------------------------------------------------------- the state machine
TURNS = st.tuples(
    st.sampled_from(AGENTS),
    st.integers(0, 2),  # session
    st.sampled_from(PEOPLE),  # sender
    st.integers(0, len(TEMPLATES) - 1),
    st.sampled_from(VISIBILITIES),
    st.sampled_from(PEOPLE),  # addressed to
)
#: The cheap paths checked after every step, for the agent the step touched.
QUICK_PATHS = (
    "store.find",
    "store.find(include_redacted)",
    "recall.cache_hit",
    "cortex.topics",
    "cortex.session_summaries",
)


class IsolationMachine(RuleBasedStateMachine):
    """Interleaved writes, forgetting, maintenance and reads over three agents.

    After every step the agent it touched is checked on the cheap paths (``QUICK_PATHS``): by no
    viewer with a fixed question (the same cache key every time, so a stale cache entry would be
    served) and by a rotating viewer; ``audit_every_path`` checks every read path mid-run, and
    ``teardown`` every read path for every agent.
    """

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self.world = World(backend)
        self.touched: str | None = None
        self.steps = 0

    def _touch(self, agent: str) -> None:
        self.touched = agent

    @initialize(turns=st.lists(TURNS, min_size=3, max_size=8))
    def seed(self, turns: list[tuple[str, int, str, int, str, str]]) -> None:
        for turn in turns:
            self.world.run(self.world.observe(*turn))
        self._touch(turns[-1][0])

    @rule(turn=TURNS)
    def observe(self, turn: tuple[str, int, str, int, str, str]) -> None:
        self.world.run(self.world.observe(*turn))
        self._touch(turn[0])

    @precondition(lambda self: bool(self.world.live()))
    @rule(data=st.data(), hard=st.booleans())
    def forget_turn(self, data: st.DataObject, hard: bool) -> None:
        word = data.draw(st.sampled_from(self.world.live()), label="turn")
        self.world.run(self.world.forget_turn(word, hard))
        self._touch(self.world.oracle.marks[word].agent)

    @rule(agent=st.sampled_from(AGENTS), person=st.sampled_from(PEOPLE), hard=st.booleans())
    def forget_participant(self, agent: str, person: str, hard: bool) -> None:
        self.world.run(self.world.forget_participant(agent, person, hard))
        self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS), session=st.integers(0, 2))
    def finalize(self, agent: str, session: int) -> None:
        if f"{agent}-s{session}" in self.world.oracle.sessions.get(agent, ()):
            self.world.run(self.world.uni.agent(agent).session(f"{agent}-s{session}").finalize())
            self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS))
    def consolidate(self, agent: str) -> None:
        """P4, then (every cycle, in these tests) the sweep: topics, procedures, idle sessions closed
        and summarised by the echo model."""
        self.world.run(self.world.uni.agent(agent).consolidate())
        self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS), viewer=st.sampled_from(VIEWERS), question=st.sampled_from(QUESTIONS))
    def answer(self, agent: str, viewer: Viewer | None, question: str) -> None:
        """An answer recorded as a query Episode; the echo model repeats the memory it was shown."""

        async def go() -> list[str]:
            ans = await self.world.uni.agent(agent).answer(
                question, llm=EchoChat(), viewer=viewer, record=True, outcome="success", limit=40
            )
            p = await self.world.probe(agent, viewer, question)

            async def returned(_: Probe) -> list[Seen]:
                return [*of_bundle(ans.context), Seen(None, ans.text)]

            return (await audit(ReadPath("answer(record)", returned, ()), p, self.world.oracle))[0]

        bad = self.world.run(go())
        assert not bad, report(bad)
        self._touch(agent)

    @rule(
        agent=st.sampled_from(AGENTS),
        template=st.integers(0, len(TEMPLATES) - 1),
        visibility=st.sampled_from(VISIBILITIES),
    )
    def ingest_artifact(self, agent: str, template: int, visibility: str) -> None:
        self.world.run(self.world.ingest_artifact(agent, template, visibility))
        self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS), key=st.sampled_from(("k1", "k2")))
    def langgraph_put(self, agent: str, key: str) -> None:
        self.world.run(self.world.lg_put(agent, key))
        self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS), key=st.sampled_from(("k1", "k2")))
    def langgraph_delete(self, agent: str, key: str) -> None:
        self.world.run(self.world.lg_delete(agent, key))
        self._touch(agent)

    @rule(agent=st.sampled_from(AGENTS), viewer=st.sampled_from(VIEWERS), data=st.data())
    def recall_for_a_marker(self, agent: str, viewer: Viewer | None, data: st.DataObject) -> None:
        """A recall (twice: the second from the cache) asking for any marker, forgotten or foreign."""
        query = data.draw(st.sampled_from(QUESTIONS), label="question")
        if self.world.oracle.marks:
            query += " " + data.draw(st.sampled_from(sorted(self.world.oracle.marks)), label="marker")
        bad, _ = self.world.run(self.world.audit(agent, viewer, query, ["recall.cache_hit"]))
        assert not bad, report(bad)

    @rule(agent=st.sampled_from(AGENTS), viewer=st.sampled_from(VIEWERS), question=st.sampled_from(QUESTIONS))
    def audit_every_path(self, agent: str, viewer: Viewer | None, question: str) -> None:
        bad, _ = self.world.run(self.world.audit(agent, viewer, question))
        assert not bad, report(bad)

    @invariant()
    def quick_audit(self) -> None:
        if self.touched is None:
            return
        self.steps += 1
        rotating = VIEWERS[1 + self.steps % (len(VIEWERS) - 1)]
        bad = self.world.run(self.world.audit(self.touched, None, QUESTIONS[0], QUICK_PATHS))[0]
        bad += self.world.run(
            self.world.audit(self.touched, rotating, QUESTIONS[self.steps % len(QUESTIONS)], QUICK_PATHS)
        )[0]
        self.touched = None
        assert not bad, report(bad)

    def teardown(self) -> None:
        """Every read path for every agent that has memory (each with another kind of viewer)."""
        try:
            bad: list[str] = []
            for agent, viewer in zip(AGENTS, (None, VIEWERS[-1], VIEWERS[1]), strict=True):
                if any(m.agent == agent for m in self.world.oracle.marks.values()):
                    bad += self.world.run(self.world.audit(agent, viewer, QUESTIONS[0]))[0]
            assert not bad, report(bad)
        finally:
            self.world.close()


def test_isolation_state_machine(backend: Backend) -> None:
    run_state_machine_as_test(
        lambda: IsolationMachine(backend),
        settings=settings(
            max_examples=backend.examples,
            stateful_step_count=backend.steps,
            deadline=None,
            derandomize=True,
            database=None,
            # No shrinking: a shrink of these runs can outlast the test timeout and lose the report;
            # the failing run is printed step by step as it happened (at most init + steps long).
            phases=(Phase.explicit, Phase.generate),
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


# --------------------------------------------------------------------------- one check per read path
#: The viewers every read path is checked for: one with a team, one who may see only public memory,
#: and none (an unrestricted recall: every visibility of the agent).
PATH_VIEWERS = (VIEWERS[1], VIEWERS[-1], None)


def build_fixed_world(backend: Backend) -> World:
    """Two agents with every visibility and template, LangGraph values, documents, each way of
    forgetting, finalised sessions, consolidation, recorded answers (enough for an active
    procedure) and a sweep with a model; then one more turn forgotten after everything was derived
    from it, and one more consolidation."""
    w = World(backend)

    async def build() -> None:
        for agent in ("a1", "a2"):
            for i, visibility in enumerate(VISIBILITIES):
                for template in (i % len(TEMPLATES), (i + 3) % len(TEMPLATES)):
                    sender = PEOPLE[(i + template) % 3]
                    await w.observe(agent, i % 3, sender, template, visibility, PEOPLE[(i + 1) % 3])
            for template in (0, 1, 3):  # public turns naming places together: topics
                await w.observe(agent, 0, "Ana", template, "public", "Ben")
            await w.lg_put(agent, "k1")
            await w.lg_put(agent, "k2")
            await w.lg_put(agent, "k1")
            for i, visibility in enumerate(("public", "private:Ana", "team:blue")):
                await w.ingest_artifact(agent, i, visibility)
            for i, visibility in enumerate(("public", "private:Ben", "team:red")):
                long_word = await w.observe(agent, 1, PEOPLE[i], LONG_TEMPLATE, visibility, PEOPLE[i - 1])
            await w.forget_turn(long_word, hard=agent == "a2")  # a forgotten turn's passages too
        await w.settle()
        passages = await w.uni.kb.store.find("a1", Tier.CHUNK, Eq("chunk_type", "message"), limit=1000)
        assert len({c.parent_id for c in passages if not c.redacted}) == 2  # the live long turns
        a1 = w.live("a1")
        await w.forget_turn(a1[0], hard=False)
        await w.forget_turn(a1[5], hard=True)
        await w.lg_delete("a1", "k2")
        await w.forget_participant("a1", "Cyd", hard=False)
        await w.forget_participant("a2", "Ben", hard=True)
        for agent in ("a1", "a2"):
            handle = w.uni.agent(agent)
            for s in sorted(w.oracle.sessions[agent]):
                await handle.session(s).finalize()
            await handle.consolidate()
            for viewer in VIEWERS:  # the same kind of question, answered in a row: a procedure
                await handle.answer(
                    QUESTIONS[1], llm=EchoChat(), viewer=viewer, record=True, outcome="success"
                )
            await handle.consolidate()
            if hasattr(handle, "sweep"):
                await handle.sweep(llm=EchoChat())
        await w.forget_turn(w.live("a1")[2], hard=False)
        await w.uni.agent("a1").consolidate()  # topics dropped by that forget are detected again

    try:
        w.run(build())
    except BaseException:
        w.close()
        raise
    return w


@pytest.fixture(scope="module")
def fixed_world(backend: Backend) -> Iterator[tuple[World, list[Probe]]]:
    w = build_fixed_world(backend)
    try:
        probes = [
            w.run(w.probe("a1", v, f"{QUESTIONS[1]} {' '.join(w.oracle.hostile('a1', v)[:6])}"))
            for v in PATH_VIEWERS
        ]
        yield w, probes
    finally:
        w.close()


@pytest.mark.parametrize("name", sorted(READ_PATHS))
def test_read_path_integrity(fixed_world: tuple[World, list[Probe]], name: str) -> None:
    """One integrity check per read path: nothing foreign, invisible or forgotten comes back to any
    of ``PATH_VIEWERS`` (asked a question plus forbidden marker words), and the path does reach live
    memory: a path that returns nothing proves nothing."""
    world, probes = fixed_world
    bad: list[str] = []
    returned = 0
    for p in probes:
        found, n = world.run(audit(READ_PATHS[name], p, world.oracle))
        bad += found
        returned += n
    assert not bad, report(bad)
    assert returned > 0, f"{name} returned nothing: its integrity check proves nothing"


# --------------------------------------------------------------------------- names said in private
#: Names only private turns say (the marker as a name), and a public turn about the same places.
NAMED = (
    ("Ana", "I sailed with {M} Quillfeather to Lake Tahoe and Paris.", "private:Ana"),
    ("Ana", "{M} Quillfeather met me in Paris near Lake Tahoe.", "private:Ana"),
    ("Ben", "We sailed to Lake Tahoe with {M} Quillfeather and Jon.", "team:red"),
    ("Ben", "Lake Tahoe and Paris are lovely in May; Jon agrees.", "public"),
    ("Cyd", "Jon and I hiked around Lake Tahoe before Paris.", "public"),
)


@pytest.fixture(scope="module")
def named_world() -> Iterator[World]:
    from tests.reliability.conftest import BACKENDS

    w = World(BACKENDS["embedded"])
    try:

        async def build() -> None:
            for i, (sender, text, visibility) in enumerate(NAMED):
                await w.observe("a1", 0, sender, text, visibility, "Jon")
                await w.observe("a1", 1, sender, text, visibility, "Jon")  # twice: names co-occur
                if i == 2:
                    await w.uni.agent("a1").consolidate()
            await w.uni.agent("a1").session("a1-s0").finalize()
            await w.uni.agent("a1").consolidate()  # P4, then topics over the entities

        w.run(build())
        yield w
    finally:
        w.close()


def test_names_said_in_private_reach_no_read_path_of_another_viewer(named_world: World) -> None:
    """A name only private and team turns say becomes an Entity (which P6 groups into Topics); no
    read path may show it to a viewer those turns do not admit: topics group entities by public
    sources only, and an Entity node is as private as the turns that name it (next test)."""
    bad: list[str] = []
    for viewer in (VIEWERS[-1], VIEWERS[2]):  # public only; Ben (in no team)
        found, counts = named_world.run(
            named_world.audit("a1", viewer, "Who sailed to Lake Tahoe and Paris?")
        )
        bad += found
        assert counts["cortex.topics"] > 0, "no topic was built: this test proves nothing"
    assert not bad, report(bad)


def test_entity_nodes_keep_names_said_in_private_to_their_viewers(named_world: World) -> None:
    found, _ = named_world.run(named_world.audit("a1", VIEWERS[-1], "Quillfeather", ["store.find"]))
    assert not found, report(found)


# --------------------------------------------------------------------------- coverage
def test_every_read_method_has_a_read_path() -> None:
    """A new read method on the Store protocol, the facade or an integration fails here until a
    read path in ``read_paths.py`` covers it (or ``NOT_READS`` says why it reads no node)."""
    missing = uncovered()
    assert not missing, (
        "read methods without a read path (add one to tests/reliability/read_paths.py, or a reason "
        f"to NOT_READS): {missing}"
    )


def test_read_paths_cover_only_real_methods() -> None:
    surface = api_read_surface()
    assert covered() <= surface, f"read paths name methods that do not exist: {sorted(covered() - surface)}"
    assert not set(NOT_READS) & covered(), "a method is both a read path and allowlisted as not a read"
