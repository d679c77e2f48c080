"""The wake-up's line selection: the budget contract (a property over random candidates, every
counter and layout, mirroring recall's), clamped shares, hard caps, skip-not-stop, de-duplication."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.recall.test_budget_contract import COUNTERS, T0, TEXT
from uniko_memory.config import WakeupConfig
from uniko_memory.providers.token_counter import MiniLMTokenCounter
from uniko_memory.recall.items import ContextBundle, RecallItem, RecallSource, date_label
from uniko_memory.wakeup import WakeCandidate, kind_budgets, select

KINDS = ["fact", "observation", "topic", "procedure", "episode"]
COUNTER = MiniLMTokenCounter()


def cand(i: int, kind: str, text: str, score: float, day: int | None = None) -> WakeCandidate:
    ts = T0 + timedelta(days=day) if day is not None else None
    label = date_label(ts) if ts is not None and kind == "observation" else ""
    item = RecallItem(
        node_id=f"n{i}",
        kind=kind,  # type: ignore[arg-type]
        score=score,
        content=text,
        rendered=label + text,
        timestamp=ts,
        sources=[RecallSource(message_id=f"m{i}")],
    )
    return WakeCandidate(item=item, kind=kind, score=score)


@st.composite
def candidates(draw: st.DrawFn) -> list[WakeCandidate]:
    n = draw(st.integers(0, 40))
    return [
        cand(
            i,
            draw(st.sampled_from(KINDS)),
            draw(TEXT),
            draw(st.floats(0, 1)),
            draw(st.one_of(st.none(), st.integers(0, 4))),
        )
        for i in range(n)
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cands=candidates(),
    budget=st.integers(1, 1200),
    counter=st.sampled_from(sorted(COUNTERS)),
    layout=st.sampled_from(["grouped", "standalone"]),
    lines=st.integers(0, 25),
    identity=st.booleans(),
)
def test_every_render_mode_fits_max_tokens_in_the_counters_tokens(
    cands: list[WakeCandidate], budget: int, counter: str, layout: str, lines: int, identity: bool
) -> None:
    cfg = WakeupConfig(max_lines=lines)
    l0 = RecallItem(
        node_id="l0", kind="summary", score=1.0, content="Memory of A and B", rendered="Memory of A and B"
    )
    sel = select(
        l0 if identity else None, cands, cfg, max_tokens=budget, counter=COUNTERS[counter], layout=layout
    )  # type: ignore[arg-type]
    bundle = ContextBundle(items=sel.items, total_tokens=sel.total_tokens, layout=layout, token_budget=budget)  # type: ignore[arg-type]
    count = COUNTERS[counter].count
    framed, bare = bundle.render(), bundle.render(header=False)
    assert count(framed) <= budget and count(bare) <= budget
    assert sel.total_tokens == (count(framed) if sel.items else 0)
    l1 = [i for i in sel.items if i.node_id != "l0"]
    assert len(l1) <= lines
    assert len({i.node_id for i in sel.items}) == len(sel.items)
    kinds = [c.kind for c in cands if c.item.node_id in {i.node_id for i in l1}]
    assert kinds.count("procedure") <= cfg.procedure_cap
    assert kinds.count("topic") <= cfg.consolidation_cap


def test_a_share_is_not_a_reservation_the_pool_fills_every_line() -> None:
    # Only observations in the pool: their 30 % share is clamped, the rest backfills from them.
    cands = [cand(i, "observation", f"Ana talked about subject{i} number{i}", 1 - i / 100) for i in range(40)]
    sel = select(None, cands, WakeupConfig(), max_tokens=5000, counter=COUNTER)
    assert len(sel.items) == 20
    assert kind_budgets(cands, WakeupConfig()) == {"fact": 0, "observation": 6, "topic": 0, "procedure": 0}


def test_the_procedure_cap_binds_even_when_procedures_score_best() -> None:
    cands = [cand(i, "procedure", f"procedure{i} does step{i}", 1.0) for i in range(10)]
    cands += [cand(100 + i, "fact", f"Ana likes hobby{i} thing{i}", 0.1) for i in range(30)]
    cfg = WakeupConfig(kind_shares={"procedure": 1.0}, backfill_kinds=["fact", "observation"])
    sel = select(None, cands, cfg, max_tokens=5000, counter=COUNTER)
    assert sum(i.kind == "procedure" for i in sel.items) == cfg.procedure_cap
    assert len(sel.items) == 20  # freed slots backfill facts, never more procedures


def test_consolidation_output_is_capped() -> None:
    cands = [cand(i, "topic", f"topic{i} summary{i} words{i}", 1.0) for i in range(20)]
    cands += [cand(100 + i, "fact", f"Ana likes hobby{i} thing{i}", 0.1) for i in range(30)]
    cfg = WakeupConfig(kind_shares={"topic": 1.0}, consolidation_cap=4)
    sel = select(None, cands, cfg, max_tokens=5000, counter=COUNTER)
    assert sum(i.kind == "topic" for i in sel.items) == 4
    assert len(sel.items) == 20


def test_an_oversized_line_is_skipped_never_a_reason_to_stop() -> None:
    huge = cand(0, "fact", "word " * 3000, 1.0)
    rest = [cand(i, "fact", f"Ana likes hobby{i} thing{i}", 0.5 - i / 100) for i in range(1, 10)]
    sel = select(None, [huge, *rest], WakeupConfig(), max_tokens=300, counter=COUNTER)
    ids = [i.node_id for i in sel.items]
    assert "n0" not in ids and len(ids) == 9
    assert sel.dropped["n0"] == "token budget"


def test_near_duplicate_lines_are_dropped() -> None:
    a = cand(0, "fact", "Caroline adopted a second cat named Bailey from the shelter", 1.0)
    b = cand(1, "observation", "Caroline adopted a second cat named Bailey from the shelter in Boston", 0.9)
    c = cand(2, "observation", "Melanie painted a sunrise over Lake Tahoe", 0.8)
    sel = select(None, [a, b, c], WakeupConfig(), max_tokens=5000, counter=COUNTER)
    assert [i.node_id for i in sel.items] == ["n0", "n2"]
    assert sel.dropped["n1"] == "near-duplicate"
