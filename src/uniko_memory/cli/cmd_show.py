"""``uniko show ID``: one node, its fields and edges, and its provenance chain back to the
Messages it was derived from (Fact → Observations → Messages, Chunk → the turns it covers, ...)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ..model import Direction, EdgeType, Message, Node, Tier
from .nodes_view import node_json, node_text, node_time
from .output import _out
from .store_access import CliError, add_store_options, open_kb, pick_agent, print_json, run_command, short

#: The edges that lead from a node to what it was derived from, and which way to follow each.
PROVENANCE_EDGES: tuple[tuple[EdgeType, Direction], ...] = (
    (EdgeType.SUPPORTED_BY, Direction.OUT),  # Fact -> Observation
    (EdgeType.OBSERVED_IN, Direction.OUT),  # Observation -> Message | Chunk
    (EdgeType.SUMMARIZES, Direction.OUT),  # Summary -> Session
    (EdgeType.HAS_CHUNK, Direction.IN),  # Chunk <- Message | Session | Artifact
    (EdgeType.IN_SESSION, Direction.IN),  # Session <- Message
    (EdgeType.INVOLVES, Direction.OUT),  # Episode -> node
    (EdgeType.PROMOTED, Direction.OUT),  # Procedure -> Episode
    (EdgeType.BELONGS_TO, Direction.IN),  # Topic <- Entity | Fact
    (EdgeType.MENTIONS, Direction.IN),  # Entity <- Message | Chunk | Episode
    (EdgeType.ATTACHED_TO, Direction.OUT),  # Artifact -> Message | Session
)
MAX_DEPTH = 6
DEFAULT_MAX_CHILDREN = 10
#: Sources of one node read (then ordered by time, oldest first) before --max-children is applied.
SOURCES_READ = 1000


@dataclass
class Step:
    """One node of the provenance tree: how it was reached, and what it came from."""

    node: Node
    via: str | None = None
    children: list[Step] = field(default_factory=list)
    more: int = 0  # sources left out past --max-children

    def to_json(self) -> dict[str, Any]:
        return {
            "via": self.via,
            "id": self.node.id,
            "tier": self.node.tier.value,
            "text": node_text(self.node),
            "time": node_time(self.node) or None,
            "sources": [c.to_json() for c in self.children],
            "more_sources": self.more,
        }


def register(sub: Any) -> None:
    p = sub.add_parser(
        "show",
        help="show a node with its provenance chain back to the Messages",
        description="Show one node (an id from `uniko list` or `uniko recall --explain`): its fields, "
        "its edges and where it came from, down to the Messages.",
    )
    p.add_argument("id")
    add_store_options(p, read_only=True)
    p.add_argument(
        "--max-children",
        type=int,
        default=DEFAULT_MAX_CHILDREN,
        help=f"sources shown per node (default {DEFAULT_MAX_CHILDREN})",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("show", lambda: show(args))


async def _sources(store: Any, agent: str, node: Node) -> list[tuple[str, str]]:
    """``(via, id)`` of the nodes ``node`` was derived from, in a stable order."""
    out: list[tuple[str, str]] = []
    for edge_type, direction in PROVENANCE_EDGES:
        for edge in await store.neighbors(agent, [node.id], [edge_type], direction):
            other = edge.dst if direction is Direction.OUT else edge.src
            out.append((edge_type.value, other))
    if node.tier is Tier.CHUNK:
        out.extend(("COVERS", mid) for mid in getattr(node, "covered_ids", []))
    return list(dict.fromkeys(out))


async def provenance(store: Any, agent: str, root: Node, *, max_children: int) -> Step:
    tree = Step(root)
    seen = {root.id}
    level = [tree]
    for _ in range(MAX_DEPTH):
        nxt: list[Step] = []
        for step in level:
            if isinstance(step.node, Message):
                continue  # the chain ends at the turns
            refs = [(via, nid) for via, nid in await _sources(store, agent, step.node) if nid not in seen]
            nodes = await store.get_many(agent, [nid for _, nid in refs[:SOURCES_READ]])
            found = [(via, nodes[nid]) for via, nid in refs if nid in nodes]
            found.sort(key=lambda vn: (str(vn[1].time_key() or ""), vn[1].id))  # oldest first
            step.more = max(0, len(refs) - max_children)
            for via, source in found[:max_children]:
                seen.add(source.id)
                child = Step(source, via)
                step.children.append(child)
                nxt.append(child)
        if not nxt:
            break
        level = nxt
    return tree


def _print_tree(step: Step, indent: str = "") -> None:
    for i, child in enumerate(step.children):
        last = i == len(step.children) - 1 and not step.more
        n = child.node
        text = node_text(n)
        when = node_time(n)
        _out(
            f"{indent}{'└' if last else '├'}─ {child.via} {n.tier.value} {n.id}"
            f"{f'  {when}' if when else ''}  {short(text, 90)}"
        )
        _print_tree(child, indent + ("   " if last else "│  "))
    if step.more:
        _out(f"{indent}└─ ... and {step.more} more (--max-children)")


async def _find_agent(store: Any, agent: str | None, node_id: str) -> tuple[str, Node]:
    candidates = [await pick_agent(store, agent)] if agent is not None else sorted(await store.agents())
    for name in candidates:
        node = await store.get(name, node_id)
        if node is not None:
            return name, node
    where = f"agent {agent!r}" if agent is not None else "this store"
    raise CliError(f"no node {node_id!r} in {where} (ids come from `uniko list` or `uniko recall --explain`)")


async def show(args: argparse.Namespace) -> int:
    if args.max_children < 0:
        raise CliError("--max-children must be at least 0")
    async with open_kb(args.path, read_only=args.read_only) as kb:
        store = kb.store
        agent, node = await _find_agent(store, args.agent, args.id)
        edges_out = await store.neighbors(agent, [node.id], None, Direction.OUT)
        edges_in = await store.neighbors(agent, [node.id], None, Direction.IN)
        tree = await provenance(store, agent, node, max_children=args.max_children)
    if args.json:
        print_json(
            {
                "agent": agent,
                "node": node_json(node),
                "edges": {
                    "out": [e.model_dump(mode="json") for e in edges_out],
                    "in": [e.model_dump(mode="json") for e in edges_in],
                },
                "provenance": [c.to_json() for c in tree.children],
                "more_sources": tree.more,
            }
        )
        return 0
    _out(f"{node.tier.value} {node.id} (agent {agent}){'  [redacted]' if node.redacted else ''}")
    for name, value in node.model_dump(mode="json").items():
        if name in ("id", "agent") or value in (None, "", [], {}):
            continue
        _out(f"  {name}: {short(str(value), 100)}")
    counts: dict[str, int] = {}
    for e in edges_out:
        counts[f"{e.type.value} →"] = counts.get(f"{e.type.value} →", 0) + 1
    for e in edges_in:
        counts[f"← {e.type.value}"] = counts.get(f"← {e.type.value}", 0) + 1
    if counts:
        _out("edges: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if isinstance(node, Message):
        _out("provenance: a Message is where memory starts")
    elif tree.children:
        _out("provenance:")
        _print_tree(tree)
    else:
        _out("provenance: none recorded")
    return 0
