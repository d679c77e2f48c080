"""``uniko audit``: the runtime integrity audit of a store, agent by agent (``uniko_memory.integrity``)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from ..errors import UnikoError
from .output import _err, _out
from .store_access import DEFAULT_STORE, engine_error


def register(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="check every read path: no forgotten, invalidated or out-of-scope memory comes back",
        description="Run the integrity audit (read-only) on an embedded store. Exit status: 0 clean, "
        "1 findings (each path's count and offending ids are printed), 2 no store.",
    )
    p.add_argument(
        "--path", type=Path, default=DEFAULT_STORE, help=f"the embedded store (default: ./{DEFAULT_STORE})"
    )
    p.add_argument(
        "--agent", action="append", default=None, help="audit this agent (repeatable; default: all)"
    )
    p.add_argument("--probe-queries", type=int, default=None, help="probe texts per path")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.path.exists():
        _err(f"uniko audit: no store at {args.path}")
        return 2
    try:
        return asyncio.run(_audit(args.path, args.agent, args.probe_queries, args.json))
    except UnikoError as exc:
        _err(engine_error("audit", exc))
        return 2


async def _audit(path: Path, agents: list[str] | None, probe_queries: int | None, as_json: bool) -> int:
    from ..facade import Uniko
    from ..integrity import AuditConfig

    cfg = AuditConfig() if probe_queries is None else AuditConfig(probe_queries=probe_queries)
    uni = await Uniko.open(path)
    try:
        names = agents or await uni.kb.store.agents()
        reports = [await uni.agent(a).audit(cfg) for a in names]
    finally:
        await uni.close()
    if as_json:
        _out(json.dumps([r.model_dump(mode="json") for r in reports], indent=1))
    else:
        for r in reports:
            s = r.sampled
            _out(
                f"agent {r.agent}: sampled {s['forgotten']} forgotten, {s['invalidated']} invalidated, "
                f"{s['out_of_scope']} out-of-scope; {s['probe_queries']} probe texts"
            )
            for c in r.checks:
                ids = sorted({f.node_id or "(probe failed)" for f in c.findings})
                status = "ok" if not c.findings else f"{len(c.findings)} finding(s): {', '.join(ids[:20])}"
                _out(f"  {c.path.value:<22} probes {c.probes:>3}  returned {c.returned:>5}  {status}")
    return 1 if any(not r.ok for r in reports) else 0
