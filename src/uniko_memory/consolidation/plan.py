"""The pure part of a consolidation cycle: group votes, cluster object phrasings, decide.

No I/O here. ``plan_group`` turns one (subject, predicate) group's new votes and its prior open
Facts into reinforcements, new Facts and validity closures (contradictions):

- object phrasings are clustered greedily (sorted keys, running-mean centroids, cosine ≥ the
  threshold; exact-string buckets without vectors);
- a Fact is contradicted when more than ``share`` of the votes that came after it started lie
  outside its cluster; its validity closes at the first such vote, never deleting it;
- votes of a Fact's cluster that come after its closure start a new Fact (the value came back).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from ..model import Fact, Observation, normalize_key

if TYPE_CHECKING:
    from .slots import SlotReading

_ARTICLES = ("the ", "a ", "an ")


def subject_key(subject: str) -> str:
    """The group key of a subject: normalised, leading article dropped."""
    key = normalize_key(subject)
    for art in _ARTICLES:
        if key.startswith(art) and len(key) > len(art):
            return key[len(art) :]
    return key


@dataclass(eq=False)
class Vote:
    """One observation's triple, as a vote for an object in its (subject, predicate) group."""

    obs: Observation
    subject: str
    predicate: str
    object: str
    object_key: str = ""
    #: The slots the statement fills (``consolidation.slots``) and, when it says something stopped
    #: ("does not drink coffee anymore"), the thing that did.
    slots: tuple[SlotReading, ...] = ()
    stopped: str | None = None
    change_cue: bool = False

    def __post_init__(self) -> None:
        self.object_key = self.object_key or normalize_key(self.object)

    @property
    def at(self) -> datetime:
        return self.obs.observed_at


@dataclass
class Group:
    subject_key: str
    predicate: str
    visibility: str
    votes: list[Vote] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.subject_key, self.predicate, self.visibility)


def group_votes(votes: Sequence[Vote]) -> list[Group]:
    """Votes grouped by (normalised subject, predicate, visibility), each group time-ordered."""
    groups: dict[tuple[str, str, str], Group] = {}
    for v in votes:
        key = (subject_key(v.subject), v.predicate, v.obs.visibility)
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(*key)
        g.votes.append(v)
    for g in groups.values():
        g.votes.sort(key=lambda v: (v.at, v.obs.id))
    return sorted(groups.values(), key=lambda g: g.key)


def build_clusters(
    keys: Sequence[str], vectors: Mapping[str, np.ndarray], threshold: float
) -> tuple[dict[str, int], list[np.ndarray | None]]:
    """Greedy single pass over the sorted keys; a key joins the closest centroid at ≥ ``threshold``.

    Returns key → cluster index and the (unnormalised running-sum) centroids; a key without a
    vector forms an exact-string bucket (centroid None).
    """
    assign: dict[str, int] = {}
    sums: list[np.ndarray | None] = []
    for key in sorted(set(keys)):
        vec = vectors.get(key)
        best, best_cos = -1, threshold
        if vec is not None:
            for i, c in enumerate(sums):
                if c is None:
                    continue
                cos = float(np.dot(vec, c) / (np.linalg.norm(c) or 1.0))
                if cos >= best_cos:
                    best, best_cos = i, cos
        if best >= 0:
            centroid = sums[best]
            assert centroid is not None and vec is not None
            sums[best] = centroid + vec
            assign[key] = best
        else:
            assign[key] = len(sums)
            sums.append(None if vec is None else vec.astype(np.float64).copy())
    return assign, sums


def cluster_of_value(
    key: str,
    vec: np.ndarray | None,
    assign: Mapping[str, int],
    sums: Sequence[np.ndarray | None],
    threshold: float,
) -> int | None:
    """The cluster an existing Fact's object belongs to (exact key first, then the best centroid)."""
    if key in assign:
        return assign[key]
    if vec is None:
        return None
    best, best_cos = None, threshold
    for i, c in enumerate(sums):
        if c is None:
            continue
        cos = float(np.dot(vec, c) / (np.linalg.norm(c) or 1.0))
        if cos >= best_cos:
            best, best_cos = i, cos
    return best


def mode_string(values: Sequence[tuple[str, datetime]]) -> str:
    """Most frequent string; ties go to the most recent, then the smallest."""
    counts = Counter(v for v, _ in values)
    latest: dict[str, datetime] = {}
    for v, t in values:
        if v not in latest or t > latest[v]:
            latest[v] = t
    return min(counts, key=lambda v: (-counts[v], -latest[v].timestamp(), v))


@dataclass(eq=False)
class NewFact:
    """A Fact this cycle creates; its id is allocated later (it may collide with a closed one)."""

    group: Group
    cluster: int
    votes: list[Vote]
    id: str = ""
    closed_at: datetime | None = None

    @property
    def valid_from(self) -> datetime:
        return self.votes[0].at

    @property
    def subject(self) -> str:
        return mode_string([(v.subject, v.at) for v in self.votes])

    @property
    def object(self) -> str:
        return mode_string([(v.object, v.at) for v in self.votes])

    @property
    def surface(self) -> Vote:
        """The vote whose sentence the Fact shows: the earliest that words it as the Fact does."""
        subject, obj = self.subject, self.object
        return next((v for v in self.votes if v.subject == subject and v.object == obj), self.votes[0])


@dataclass(eq=False)
class Reinforce:
    fact: Fact
    votes: list[Vote]


@dataclass(eq=False)
class Close:
    """Close ``target``'s validity at ``at``; ``by`` is the Fact whose evidence contradicted it."""

    target: Fact | NewFact
    at: datetime
    by: Fact | NewFact | None = None


@dataclass
class GroupPlan:
    new: list[NewFact] = field(default_factory=list)
    reinforce: list[Reinforce] = field(default_factory=list)
    close: list[Close] = field(default_factory=list)


def _relevant(
    votes: Sequence[Vote], cluster_of: Mapping[int, int], own: int | None, start: datetime
) -> list[Vote]:
    """Votes that bear on a Fact starting at ``start``: its own from then on, others strictly after."""
    return [v for v in votes if v.at > start or (cluster_of[id(v)] == own and v.at >= start)]


def _contradiction(
    votes: Sequence[Vote], cluster_of: Mapping[int, int], own: int | None, start: datetime, share: float
) -> tuple[datetime, int, Vote] | None:
    """(closing time, winning cluster, its first vote) when the outside share exceeds ``share``."""
    rel = _relevant(votes, cluster_of, own, start)
    outside = [v for v in rel if cluster_of[id(v)] != own]
    if not rel or len(outside) / len(rel) <= share:
        return None
    tally = Counter(cluster_of[id(v)] for v in outside)
    last = {cluster_of[id(v)]: v.at for v in outside}
    winner = min(tally, key=lambda c: (-tally[c], -last[c].timestamp(), c))
    first = next(v for v in outside if cluster_of[id(v)] == winner)
    return min(v.at for v in outside), winner, first


def plan_group(
    group: Group,
    prior: Sequence[Fact],
    assign: Mapping[str, int],
    prior_cluster: Mapping[str, int | None],
    share: float,
) -> GroupPlan:
    """Decide reinforcements, new Facts and closures for one group (see the module docstring)."""
    votes = group.votes
    cluster_of = {id(v): assign[v.object_key] for v in votes}
    plan = GroupPlan()
    owner_of_vote: dict[int, Fact | NewFact] = {}
    pending: list[tuple[Fact | NewFact, Vote]] = []  # closures waiting for the winner's Fact

    # 1. Prior open Facts: contradicted or not, by the votes that came after they started.
    closing: dict[str, tuple[datetime, Vote]] = {}
    for f in prior:
        hit = _contradiction(votes, cluster_of, prior_cluster.get(f.id), f.valid_from, share)
        if hit is not None:
            closing[f.id] = (hit[0], hit[2])

    # 2. Each cluster's votes reinforce its prior Fact (before any closure), or start a new Fact.
    clusters = sorted(
        {cluster_of[id(v)] for v in votes}, key=lambda c: next(v.at for v in votes if cluster_of[id(v)] == c)
    )
    for c in clusters:
        cv = [v for v in votes if cluster_of[id(v)] == c]
        owners = sorted(
            (f for f in prior if prior_cluster.get(f.id) == c),
            key=lambda f: (f.id in closing, -f.observation_count, -f.valid_from.timestamp(), f.id),
        )
        rest = cv
        if owners:
            owner = owners[0]
            end = closing[owner.id][0] if owner.id in closing else None
            before = [v for v in cv if end is None or v.at < end]
            rest = [v for v in cv if end is not None and v.at >= end]
            if before:
                plan.reinforce.append(Reinforce(owner, before))
                for v in before:
                    owner_of_vote[id(v)] = owner
        if rest:
            nf = NewFact(group, c, rest)
            plan.new.append(nf)
            for v in rest:
                owner_of_vote[id(v)] = nf

    # 3. New Facts can be contradicted by later votes of the same batch; the value's return after
    #    the closure starts a continuation Fact (one level: it is the latest word).
    for nf in list(plan.new):
        hit = _contradiction(votes, cluster_of, nf.cluster, nf.valid_from, share)
        if hit is None:
            continue
        at, _, first = hit
        after = [v for v in nf.votes if v.at >= at]
        if after and len(after) < len(nf.votes):
            nf.votes = [v for v in nf.votes if v.at < at]
            cont = NewFact(group, nf.cluster, after)
            plan.new.append(cont)
            for v in after:
                owner_of_vote[id(v)] = cont
        elif after:
            continue  # all of its own votes are after the contradiction: nothing to close
        nf.closed_at = at
        pending.append((nf, first))
    for f in prior:
        if f.id in closing:
            pending.append((f, closing[f.id][1]))

    for target, first in pending:
        end = target.closed_at if isinstance(target, NewFact) else closing[target.id][0]
        assert end is not None
        plan.close.append(Close(target, end, owner_of_vote.get(id(first))))
    return plan
