"""From ranked nodes to a token-budgeted bundle: render, de-duplicate (MMR, provenance), pack.

The budget is the rendered text's: packing charges each item the tokens of the entry it renders
as, a date heading when it opens one, the line breaks, and the framing (header line and
``<memory>`` tags) once, all with the caller's token counter; then the text ``render()`` returns
is counted whole and trimmed from the end until it fits (a counter need not be additive). An
item that would overflow is skipped and smaller ones after it may still fit.

A little over 400 lines on purpose: rendering an item and charging it are one contract (the
budget is on the rendered text), so they stay in one module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from ..config import RecallPacking
from ..model import Chunk, Episode, Fact, Message, Node, Observation, Procedure, Summary, Topic
from ..providers.token_counter import (
    TokenCounter,
    default_token_counter,
    is_additive_over_lines,
    word_lower_bound,
)
from .items import (
    MEMORY_CLOSE,
    MEMORY_OPEN,
    Layout,
    RecallItem,
    RecallSource,
    date_label,
    header_for,
    item_label,
    message_source,
    render_item,
    render_text,
)
from .relevance import BELOW_FLOOR, RelevanceFloor

_WORD = re.compile(r"\w+")
#: ``pack``'s defaults: MMR considers this many of the best remaining candidates at each step
#: (keeps packing linear); word overlap (Jaccard) below the floor is topical, not redundant.
MMR_WINDOW: int = RecallPacking.model_fields["mmr_window"].default
MMR_SIMILARITY_FLOOR: float = RecallPacking.model_fields["mmr_similarity_floor"].default


def _day(ts: datetime) -> str:
    return f"{ts.day} {ts:%B %Y}"


def superseded_at(node: Node) -> datetime | None:
    """When a newer value replaced what ``node`` states (None: it was not replaced)."""
    if isinstance(node, Observation):
        return node.superseded_at
    if isinstance(node, Fact) and node.superseded_by:
        return node.valid_to
    return None


def superseded_note(at: datetime) -> str:
    """The mark of a statement a newer value replaced (``docs/concepts/knowledge-updates.md``)."""
    return f"(no longer true from {_day(at)})"


def fact_validity(fact: Fact, statement: str, as_of: datetime | None = None) -> str:
    """When a Fact holds, in words that claim no more than was said: "(as of 8 May 2023)" for a
    statement dated only by when it was said, the event's day for one the turn dated ("yesterday"),
    unless the sentence already names it; then ``fact_end`` (the profile's form: its lines stand
    without a date heading)."""
    start = _day(fact.valid_from)
    end = fact_end(fact, as_of)
    if fact.time_basis == "event":
        parts = [p for p in (start if start not in statement else "", end) if p]
    else:
        parts = [f"as of {start}", *([end] if end else [])]
    return f" ({', '.join(parts)})" if parts else ""


def fact_end(fact: Fact, as_of: datetime | None = None) -> str:
    """How a Fact stopped holding: "until ..." once it was contradicted or forgotten, "no longer
    true from ..." once a newer value replaced it (as of ``as_of``, default now); "" while open."""
    until = f"until {_day(fact.valid_to)}" if fact.valid_to else ""
    replaced = superseded_at(fact)
    if replaced is not None:
        until = "" if as_of is not None and replaced > as_of else f"no longer true from {_day(replaced)}"
    return until


@lru_cache(maxsize=8192)
def with_absolute_dates(text: str, ts: Any) -> str:
    """Append the absolute date after each relative phrase: "yesterday" → "yesterday (7 May 2023)"."""
    from ..nlp.temporal import find_temporal_phrases, format_window

    if ts is None:
        return text
    try:
        matches = find_temporal_phrases(text, ts, strict=True)
    except Exception:  # rendering must never fail a recall
        return text
    out, pos = [], 0
    for m in matches:
        label = format_window(m.window)
        if label.lower() in m.phrase.lower():
            continue
        out.append(text[pos : m.end])
        out.append(f" ({label})")
        pos = m.end
    out.append(text[pos:])
    return "".join(out)


def node_to_item(
    node: Node, score: float, channels: list[str], as_of: datetime | None = None
) -> RecallItem | None:
    """The bundle view of a node, with its provenance back to Messages; None if not evidence.

    A statement a newer value replaced by ``as_of`` (default: any time) is marked so
    (``superseded_note``): the old value stays readable for questions about the past, and nobody
    reads it as current."""
    if isinstance(node, Message):
        body = f"{node.sender_name}: {node.content}"
        return RecallItem(
            node_id=node.id,
            kind="message",
            score=score,
            content=node.content,
            rendered=date_label(node.timestamp) + body,
            timestamp=node.timestamp,
            session_id=node.session_id,
            sources=[message_source(node.id)],
            channels=channels,
            category=node.category,
        )
    if isinstance(node, Observation):
        replaced = node.superseded_at
        mark = f" {superseded_note(replaced)}" if replaced and (as_of is None or replaced <= as_of) else ""
        return RecallItem(
            node_id=node.id,
            kind="observation",
            score=score,
            content=node.content,
            rendered=date_label(node.observed_at) + node.content + mark,
            timestamp=node.observed_at,
            session_id=node.session_id,
            sources=[message_source(node.message_id)] if node.message_id else [],
            channels=channels,
        )
    if isinstance(node, Chunk) and node.chunk_type == "message":
        # A passage of a long Message: its words, its speaker, its time (recall.passages).
        speaker = node.metadata.get("speaker")
        return RecallItem(
            node_id=node.id,
            kind="passage",
            score=score,
            content=node.text,
            rendered=date_label(node.start_time) + (f"{speaker}: " if speaker else "") + node.text,
            timestamp=node.start_time,
            session_id=node.session_id,
            sources=[message_source(m, node.id) for m in node.covered_ids],
            channels=channels,
        )
    if isinstance(node, Chunk):
        msg_ids = list(node.metadata.get("source_message_ids") or node.covered_ids)
        if node.parent_tier.value == "artifact":
            sources = [RecallSource(kind="artifact", artifact_id=node.parent_id, chunk_id=node.id)]
        else:
            sources = [message_source(m, node.id) for m in msg_ids]
        return RecallItem(
            node_id=node.id,
            kind="chunk",
            score=score,
            content=node.text,
            rendered=date_label(node.start_time, node.end_time) + node.text,
            timestamp=node.start_time,
            end_timestamp=node.end_time,
            session_id=node.session_id,
            sources=sources,
            channels=channels,
        )
    if isinstance(node, Fact):
        statement = node.statement()
        end = fact_end(node, as_of)
        return RecallItem(
            node_id=node.id,
            kind="fact",
            score=score,
            content=statement,
            # Dated like every other entry, by the day it holds from, so the newest-first bundle
            # puts an older value below the turns that changed it even when no rule replaced it.
            rendered=date_label(node.valid_from) + statement + (f" ({end})" if end else ""),
            timestamp=node.valid_from,
            channels=channels,
            category=node.category,
        )
    if isinstance(node, Topic):
        text = f"{node.name}: {node.summary}".strip(": ")
        return RecallItem(
            node_id=node.id, kind="topic", score=score, content=text, rendered=text, channels=channels
        )
    if isinstance(node, Procedure):
        text = f"{node.name} — {node.description}".strip(" —")
        return RecallItem(
            node_id=node.id, kind="procedure", score=score, content=text, rendered=text, channels=channels
        )
    if isinstance(node, Episode):
        text = node.search_text() or node.action_type
        return RecallItem(
            node_id=node.id,
            kind="episode",
            score=score,
            content=text,
            rendered=date_label(node.timestamp) + text,
            timestamp=node.timestamp,
            channels=channels,
        )
    if isinstance(node, Summary):
        return RecallItem(
            node_id=node.id,
            kind="summary",
            score=score,
            content=node.text,
            rendered=node.text,
            channels=channels,
        )
    return None


def finish_render(item: RecallItem, counter: TokenCounter | None = None) -> None:
    """Resolve relative dates in raw text (only for items that may enter the bundle) and count
    its standalone entry (``item.tokens``; packing then charges the item its share)."""
    if item.kind in ("message", "passage", "chunk") and item.timestamp is not None:
        label = date_label(item.timestamp, item.end_timestamp if item.kind == "chunk" else None)
        body = item.rendered[len(label) :] if item.rendered.startswith(label) else item.rendered
        item.rendered = label + with_absolute_dates(body, item.timestamp)
    item.tokens = (counter or default_token_counter()).count(render_item(item))


@lru_cache(maxsize=4096)  # the same memories come back across recalls
def _tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _share(words: set[str], of: frozenset[str]) -> float:
    """How much of ``of`` (a turn's words) ``words`` (its statements' words) hold."""
    return len(words & of) / len(of) if of else 1.0


def _share_kind(kind: str) -> str:
    """The kind a share is charged to: a passage is part of a Message."""
    return "message" if kind == "passage" else kind


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _redundancy(sim: float, floor: float = MMR_SIMILARITY_FLOOR) -> float:
    """MMR's penalty counts only overlap beyond ``floor``: items on the same topic share words
    (names, the subject) without repeating each other; near-paraphrases are penalised."""
    return max(0.0, (sim - floor) / (1.0 - floor))


@dataclass
class Packed:
    items: list[RecallItem]
    #: Tokens of the framed rendered text (``render_text(items, layout)``), counted whole.
    total_tokens: int
    dropped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Charges:
    """What the rendered text costs beyond the entries, with one counter."""

    counter: TokenCounter
    layout: Layout
    #: The header line and the two tags, with their line breaks.
    frame: int
    #: One line break between two lines.
    newline: int

    @classmethod
    def of(cls, counter: TokenCounter, layout: Layout) -> Charges:
        newline = counter.count("\n")
        frame = sum(counter.count(t) for t in (header_for(layout), MEMORY_OPEN, MEMORY_CLOSE)) + 2 * newline
        return cls(counter, layout, frame, newline)

    def shares(self, items: Sequence[RecallItem]) -> list[int]:
        """Each item's charge in this order: its entry, a line break, the heading it opens."""
        out, dated = [], set()
        for it in items:
            label = item_label(it)
            grouped = self.layout == "grouped"
            entry = self.counter.count(render_item(it, dated=not grouped or not label))
            heading = grouped and bool(label) and label not in dated
            out.append(
                entry + self.newline + (self.counter.count(label.strip()) + self.newline if heading else 0)
            )
            dated.add(label)
        return out

    def rendered(self, items: Sequence[RecallItem]) -> int:
        """Tokens of the framed text and of the text without framing: the bundle must fit both."""
        framed = self.counter.count(render_text(items, self.layout))
        bare = self.counter.count(render_text(items, self.layout, header=False))
        return max(framed, bare)


def pack(
    ranked: Sequence[RecallItem],
    *,
    limit: int | None,
    token_budget: int,
    mmr_lambda: float,
    duplicate_threshold: float,
    chunk_share: float = 1.0,
    counter: TokenCounter | None = None,
    layout: Layout = "grouped",
    statement_carries_turn: float = 0.0,
    mmr_window: int = MMR_WINDOW,
    similarity_floor: float = MMR_SIMILARITY_FLOOR,
    type_shares: Mapping[str, float] | None = None,
    floor: RelevanceFloor | None = None,
) -> Packed:
    """Greedy MMR selection under the limit and the token budget, skipping redundant items.

    Redundant = near-duplicate text (Jaccard above the threshold), any item whose source turns are
    all already in the bundle verbatim (a Message or chunk quoting them renders their relative
    dates resolved), or a Message whose turn is already carried by the statements drawn from it
    alone (Observations or single-source Facts: its gist, dates resolved, in far fewer tokens).
    Those statements carry the turn only when their words hold at least ``statement_carries_turn``
    of the turn's words; otherwise (one clause of a longer turn) the Message replaces them, as it
    says all they say. Which comes first is the ranking's call.

    A chunk quotes about ten turns, most of them beside the point: chunks may take at most
    ``chunk_share`` of the budget, so they cannot crowd out the turns that answer.

    Every item is charged its entry as it renders (in the grouped layout a heading line for a date
    not yet in the bundle too, each with its line break); the framing is charged once. The copy in
    the result carries that share in ``tokens``. ``limit`` (None: no cap) caps the item count.
    MMR looks at the best ``mmr_window`` candidates at each step and penalises word overlap above
    ``similarity_floor`` only.

    ``type_shares`` (None: off) are soft caps per kind (``RecallPacking.type_shares``): an item
    whose kind would pass its share of the budget is deferred; once no candidate is left, the
    deferred ones refill the budget under the same rules (rank order, near-duplicates re-checked
    against what was chosen meanwhile). Without shares nothing is ever deferred.

    ``floor`` (None: off) keeps out an item it does not admit (``recall.relevance``: no word of
    the question, no channel tying it to it, and a score under its share of the best candidate's).
    """
    charges = Charges.of(counter or default_token_counter(), layout)
    count = charges.counter.count
    lower_bound = word_lower_bound(charges.counter)
    grouped = layout == "grouped"
    chosen: list[RecallItem] = []
    cost_of: list[int] = []  # each chosen item's share (copied into ``tokens`` once, at the end)
    covered: set[str] = set()  # turns quoted verbatim
    stated: dict[str, set[str]] = {}  # turn -> the words of the statements drawn from it alone
    dated: set[str] = set()  # date labels already written
    dropped: dict[str, str] = {}
    total = charges.frame
    chunk_total = 0
    chunk_cap = chunk_share * token_budget
    pool = list(ranked)
    # Word sets are needed only for candidates that reach the MMR window: built on first use.
    token_sets: list[frozenset[str] | None] = [None] * len(pool)
    max_sim = [0.0] * len(pool)
    alive = list(range(len(pool)))
    # Shares of the room for entries: the framing is charged once, to no kind.
    room = max(0, token_budget - charges.frame)
    caps = {k: share * room for k, share in (type_shares or {}).items()}
    deferred: list[int] = []  # over their kind's share while packing; they refill the budget after
    refilling = False
    top = max((it.score for it in pool), default=1.0) or 1.0
    # MMR value per candidate, updated only when its redundancy changes. ``max`` returns the first
    # best in the (rank-ordered) window, so ties go to the better-ranked candidate.
    relevance = [mmr_lambda * it.score / top for it in pool]
    value = [r - (1 - mmr_lambda) * _redundancy(0.0, similarity_floor) for r in relevance]
    ignore_below = min(similarity_floor, duplicate_threshold)
    while limit is None or len(chosen) < limit:
        if not alive:
            if refilling or not deferred:
                break
            refilling, alive, deferred = True, sorted(deferred), []
            for i in alive:  # redundancy with what was chosen while they waited
                toks_i = token_sets[i] = token_sets[i] or _tokens(pool[i].content)
                sims = [_jaccard(toks_i, _tokens(c.content)) for c in chosen]
                max_sim[i] = max(sims, default=0.0)
                value[i] = relevance[i] - (1 - mmr_lambda) * _redundancy(max_sim[i], similarity_floor)
            continue
        best = max(alive[:mmr_window], key=value.__getitem__)
        alive.remove(best)
        it = pool[best]
        if floor is not None and not floor.admits(it, it.score / top):
            dropped[it.node_id] = BELOW_FLOOR
            continue
        if max_sim[best] > duplicate_threshold:
            dropped[it.node_id] = "near-duplicate"
            continue
        msgs = set(it.message_ids())
        raw = it.kind in ("message", "chunk")  # carries the turns' own words
        if raw and msgs and msgs <= covered:
            dropped[it.node_id] = "evidence already in bundle"
            continue
        replaced: list[int] = []  # positions in chosen of the statements this Message quotes in full
        replaced_why = "source turns already in bundle"
        if it.kind == "message" and msgs and msgs <= stated.keys():
            if all(_share(stated[m], _tokens(it.content)) >= statement_carries_turn for m in msgs):
                dropped[it.node_id] = "turn already stated in bundle"
                continue
            replaced = [k for k, c in enumerate(chosen) if c.statement_source() in msgs]
        elif it.kind == "chunk" and msgs & covered:
            # No turn twice: the chunk quotes these Messages in their context, so they go and
            # their tokens return to the budget.
            replaced = [
                k
                for k, c in enumerate(chosen)
                if c.kind == "message" and set(c.message_ids()) <= msgs and c.content in it.content
            ]
            replaced_why = "turn quoted in a chosen chunk"
        if not raw and msgs and msgs <= covered:
            # A statement drawn from turns the bundle already quotes (with their dates resolved)
            # adds no evidence: its tokens go to other turns.
            dropped[it.node_id] = "source turns already in bundle"
            continue
        label = item_label(it)
        heading = grouped and bool(label) and label not in dated  # opens a date heading
        heading_cost = count(label.strip()) + charges.newline if heading else 0
        if not it.tokens:
            # Rendering only adds text: no need to render and count an item that cannot fit.
            if lower_bound is not None:
                text = it.rendered or it.content
                need = lower_bound(text[len(label) :] if grouped else text)
                if total + heading_cost + need > token_budget:
                    dropped[it.node_id] = "token budget"
                    continue
                if it.kind == "chunk" and chunk_total + need > chunk_cap:
                    dropped[it.node_id] = "chunk share of the budget"
                    continue
            finish_render(it, charges.counter)  # keeps the label in front
        entry = count(render_item(it, dated=False)) if grouped and label else it.tokens
        cost = entry + charges.newline + heading_cost
        if caps and not refilling and (cap := caps.get(_share_kind(it.kind))) is not None:
            # (the statements a Message would replace are of another kind: they do not count)
            kind = _share_kind(it.kind)
            spent = sum(
                c_cost for c, c_cost in zip(chosen, cost_of, strict=True) if _share_kind(c.kind) == kind
            )
            if spent + cost > cap:
                deferred.append(best)
                continue
        if replaced:
            gone = set(replaced)
            kept = [c for k, c in enumerate(chosen) if k not in gone]
            kept_costs = charges.shares(kept)
            kept_total = charges.frame + sum(kept_costs)
            heading = grouped and bool(label) and label not in {item_label(c) for c in kept}
            cost = entry + charges.newline + (count(label.strip()) + charges.newline if heading else 0)
            if kept_total + cost > token_budget:
                dropped[it.node_id] = "token budget"
                continue
            if it.kind == "chunk" and chunk_total + cost > chunk_cap:
                dropped[it.node_id] = "chunk share of the budget"  # the Messages it quotes stay
                continue
            for k in replaced:
                dropped[chosen[k].node_id] = replaced_why
            chosen, cost_of = kept, kept_costs
            total = kept_total
            dated = {item_label(c) for c in chosen}
            for m in msgs:
                stated.pop(m, None)
        elif total + cost > token_budget:
            dropped[it.node_id] = "token budget"
            continue
        if it.kind == "chunk":
            if chunk_total + cost > chunk_cap:
                dropped[it.node_id] = "chunk share of the budget"
                continue
            chunk_total += cost
        chosen.append(it)
        cost_of.append(cost)
        total += cost
        dated.add(label)
        if raw:
            covered |= msgs
        elif (source := it.statement_source()) is not None:
            stated.setdefault(source, set()).update(_tokens(it.content))
        toks = token_sets[best] or _tokens(it.content)
        n_toks = len(toks)
        if not n_toks:
            continue
        for i in alive[: mmr_window * 2]:
            other = token_sets[i]
            if other is None:
                other = token_sets[i] = _tokens(pool[i].content)
            n_other = len(other)
            if not n_other:
                continue
            # Jaccard <= the size ratio: skip pairs whose overlap could not matter (at or below
            # the redundancy floor and the duplicate threshold, or below what is already known).
            bound = n_other / n_toks if n_other < n_toks else n_toks / n_other
            seen = max_sim[i]
            if bound <= ignore_below or bound <= seen:
                continue
            shared = len(other & toks)
            sim = shared / (n_other + n_toks - shared)  # Jaccard
            if sim > seen:
                max_sim[i] = sim
                value[i] = relevance[i] - (1 - mmr_lambda) * _redundancy(sim, similarity_floor)
    for i in alive + deferred:
        dropped.setdefault(pool[i].node_id, "limit")
    if not chosen:
        return Packed(chosen, 0, dropped)
    chosen = [
        c if t == c.tokens else c.model_copy(update={"tokens": t})
        for c, t in zip(chosen, cost_of, strict=True)
    ]
    if is_additive_over_lines(charges.counter):
        return Packed(chosen, total, dropped)  # the running sum is the text's count, exactly
    # The contract is on the text: count it whole (a counter may merge across line breaks), and
    # drop from the end, the least valuable by packing order, until every render mode fits.
    rendered = charges.rendered(chosen)
    while chosen and rendered > token_budget:
        dropped[chosen.pop().node_id] = "token budget (rendered text)"
        rendered = charges.rendered(chosen) if chosen else 0
    return Packed(chosen, count(render_text(chosen, layout)), dropped)
