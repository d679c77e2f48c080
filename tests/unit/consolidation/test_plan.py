"""The pure rules of a cycle: clustering, canonical objects, reinforce / create / contradict."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from uniko_memory.consolidation.plan import (
    Group,
    NewFact,
    Vote,
    build_clusters,
    cluster_of_value,
    group_votes,
    mode_string,
    plan_group,
    subject_key,
)
from uniko_memory.model import Fact, Observation

from ._support import AGENT, day


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def vote(obj: str, at: datetime, subject: str = "Caroline", i: list[int] = [0]) -> Vote:  # noqa: B006
    i[0] += 1
    o = Observation(id=f"obs_{i[0]}", agent=AGENT, content=f"{subject} works at {obj}", observed_at=at)
    return Vote(o, subject, "work_at", obj)


def fact(obj: str, start: datetime, fid: str = "fct_prior", n: int = 1) -> Fact:
    return Fact(
        id=fid,
        agent=AGENT,
        subject="Caroline",
        subject_key="caroline",
        predicate="work_at",
        object=obj,
        valid_from=start,
        observation_count=n,
    )


def plan(votes: list[Vote], prior: list[Fact] = (), share: float = 0.4):  # type: ignore[assignment]
    [g] = group_votes(votes)
    assign, sums = build_clusters([v.object_key for v in g.votes], {}, 0.88)
    pc = {f.id: cluster_of_value(f.object.lower(), None, assign, sums, 0.88) for f in prior}
    return plan_group(g, list(prior), assign, pc, share)


def test_subject_key_normalises_case_space_and_articles() -> None:
    assert subject_key("  The  Old Mill ") == "old mill"
    assert subject_key("Caroline") == subject_key("caroline")
    assert subject_key("a") == "a"


def test_groups_split_by_subject_predicate_and_visibility() -> None:
    a = vote("Google", day(1))
    b = vote("Google", day(2), subject="caroline")
    c = vote("Google", day(3))
    c.obs = c.obs.model_copy(update={"visibility": "private:u1"})
    groups = group_votes([c, b, a])
    by_vis = {g.visibility: g for g in groups}
    assert {k: len(g.votes) for k, g in by_vis.items()} == {"public": 2, "private:u1": 1}
    assert {g.subject_key for g in groups} == {"caroline"}
    assert [v.at for v in by_vis["public"].votes] == [day(1), day(2)]  # time-ordered


def test_greedy_clusters_use_running_mean_centroids() -> None:
    vecs = {"a": unit(1, 0, 0), "b": unit(0.95, 0.31, 0), "c": unit(0.85, 0.527, 0), "d": unit(0, 0, 1)}
    assign, sums = build_clusters(["d", "c", "b", "a"], vecs, 0.9)
    assert assign["a"] == assign["b"]  # cos 0.95
    assert float(vecs["a"] @ vecs["c"]) < 0.9  # c alone would not join a ...
    assert assign["c"] == assign["a"]  # ... but it is close enough to the running mean of a and b
    assert assign["d"] != assign["a"]
    assert cluster_of_value("e", unit(1, 0.05, 0), assign, sums, 0.9) == assign["a"]
    assert cluster_of_value("f", unit(0, 1, 0), assign, sums, 0.9) is None


def test_without_vectors_clusters_are_exact_strings() -> None:
    assign, sums = build_clusters(["google", "google", "google llc"], {}, 0.88)
    assert assign["google"] != assign["google llc"] and sums == [None, None]


def test_canonical_object_is_the_mode_with_recency_tie_break() -> None:
    assert mode_string([("A", day(1)), ("B", day(2)), ("A", day(3))]) == "A"
    assert mode_string([("A", day(1)), ("B", day(2))]) == "B"


def test_new_group_creates_one_fact_per_cluster_from_its_first_vote() -> None:
    p = plan([vote("Google", day(1)), vote("Google", day(2))])
    [nf] = p.new
    assert isinstance(nf, NewFact) and nf.valid_from == day(1) and len(nf.votes) == 2
    assert nf.object == "Google" and not p.close and not p.reinforce


def test_votes_in_the_prior_cluster_reinforce_it() -> None:
    prior = fact("Google", day(0))
    p = plan([vote("google", day(1)), vote("Google", day(2))], [prior])
    assert [r.fact.id for r in p.reinforce] == ["fct_prior"] and len(p.reinforce[0].votes) == 2
    assert not p.new and not p.close


def test_outside_share_above_threshold_closes_the_prior_fact() -> None:
    prior = fact("Google", day(0))
    p = plan([vote("Northwind", day(5)), vote("Google", day(6))], [prior])  # 1 of 2 outside: 0.5 > 0.4
    first, second = sorted(p.close, key=lambda c: c.at)
    north = next(nf for nf in p.new if nf.object == "Northwind")
    back = next(nf for nf in p.new if nf.object == "Google")
    assert first.target is prior and first.at == day(5) and first.by is north
    # Google after the closure is a return of the old value: a new Fact, which in turn closes Northwind
    assert back.valid_from == day(6) and second.target is north and second.by is back
    assert not p.reinforce


def test_outside_share_at_threshold_does_not_close() -> None:
    prior = fact("Google", day(0))
    votes = [
        vote("Google", day(1)),
        vote("Google", day(2)),
        vote("Google", day(3)),
        vote("Northwind", day(4)),
    ]
    votes.append(vote("Northwind", day(5)))  # 2 of 5 = 0.4, not more
    p = plan(votes, [prior])
    assert not [c for c in p.close if c.target is prior]
    assert len(p.reinforce[0].votes) == 3


def test_votes_before_a_fact_started_do_not_contradict_it() -> None:
    prior = fact("Google", day(10))
    p = plan([vote("Northwind", day(1)), vote("Northwind", day(2))], [prior])
    assert not [c for c in p.close if c.target is prior]


def test_contradiction_inside_one_batch_closes_the_earlier_new_fact() -> None:
    p = plan([vote("Google", day(1)), vote("Northwind", day(3)), vote("Northwind", day(4))])
    google = next(nf for nf in p.new if nf.object == "Google")
    north = next(nf for nf in p.new if nf.object == "Northwind")
    [close] = p.close
    assert close.target is google and close.at == day(3) and close.by is north


def test_a_value_returning_after_its_closure_starts_a_new_fact() -> None:
    prior = fact("Google", day(0))
    votes = [
        vote("Google", day(1)),
        vote("Northwind", day(2)),
        vote("Northwind", day(3)),
        vote("Google", day(9)),
    ]
    p = plan(votes, [prior])  # 2 of 4 outside: closed at day 2
    assert p.close[0].target is prior and p.close[0].at == day(2)
    assert len(p.reinforce[0].votes) == 1  # day 1 still belongs to the old period
    back = [nf for nf in p.new if nf.object == "Google"]
    assert len(back) == 1 and back[0].valid_from == day(9)


def test_group_key_property() -> None:
    assert Group("caroline", "work_at", "public").key == ("caroline", "work_at", "public")
