"""The ``uniko`` command. Progress bars and printing live here, never in the engine.

``uniko ingest FILE`` reads two formats, parsing the whole file before anything is stored (a
malformed file is an error that names the line or record, and nothing is written):

- **LoCoMo JSON** (a list of conversations, or one): each conversation becomes an agent named
  after its ``sample_id``; ``session_<n>`` keeps its name; turn ``i`` of a session is timestamped
  at the session date (``"1:56 pm on 8 May, 2023"``, UTC) + 30 s × ``i``, is addressed to the other
  speaker, keeps its ``dia_id`` as id, and an image turn gets ``" [shares a photo: <caption>]"``.
  With ``--agent A`` every conversation goes to agent ``A``; when the file holds several, ids and
  session names are prefixed with the ``sample_id`` so they cannot collide.
- **JSONL of turns**, one object a line: ``{"session", "sender", "text"}`` plus optional ``"at"``
  (ISO 8601; naive = UTC; missing = now), ``"to"`` (a name or a list) and ``"id"`` (missing =
  ``<session>#<n>``, the n-th turn of that session in the file, so re-running a file is a no-op).

Every turn is one ``observe`` (one transaction); replays of stored turns are counted, not errors.
A turn the engine refuses (empty, over ``IngestConfig.max_turn_chars``, addressed to too many
people, an id already stored with other content, ...) is reported with its record and skipped; the
rest is stored and the command exits 1 (0 when every turn was stored). With ``--strict`` every
turn is checked first and one refused turn stores nothing (exit 2).

``uniko ingest-doc FILE... --agent A`` stores documents (text, Markdown, HTML, PDF) as artifacts
(``Agent.ingest_artifact``); a file whose text cannot be extracted is stored, reported, and exits 1.

``uniko bench [run_bench options]`` runs the retrieval benchmark harness (``benchmarks/run_bench.py``).
The harness is not part of the installed package: it is found in the source checkout this module
lives in (an editable install), in ``$UNIKO_BENCH_ROOT``, or in the current directory or one above.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from .model import Chunk, Observation, Tier
from .store.embedded import EmbeddedStore
from .store.filters import Eq

DEMO_AGENT = "demo"
DEMO_QUERIES = (
    "What is the name of Priya's cat?",
    "When did Tomas hurt his ankle?",
    "Where does Priya work now?",
)
DEFAULT_PATH = Path("uniko.db")
LOCOMO_TURN_STEP = timedelta(seconds=30)
_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_JSONL_KEYS = frozenset({"session", "sender", "text", "at", "to", "id"})


class InputError(ValueError):
    """The input file cannot be read or is malformed; the message names the line or record."""


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


# ---------------------------------------------------------------------------------- input formats
@dataclass(frozen=True)
class InputTurn:
    """One turn read from a file, with the agent and session it goes to."""

    agent: str
    session: str
    sender: str
    text: str
    at: datetime | None
    to: list[str]
    id: str
    where: str  # "line 12", "conv-26 session_3 turn 4": for error messages

    def turn(self) -> Any:
        from .ingest import Turn

        return Turn(sender=self.sender, content=self.text, at=self.at, addressed_to=self.to, id=self.id)


def check_turns(turns: Sequence[InputTurn], limits: Any) -> None:
    """The engine's per-turn checks (``IngestConfig`` limits), run before anything is stored."""
    from .errors import ValidationError
    from .ingest.bulk import refusal_reason
    from .ingest.turn import check_session_id, check_turn

    for t in turns:
        try:
            check_session_id(t.session)
            check_turn(
                t.turn(),
                limits.max_turn_chars,
                max_metadata_bytes=limits.max_metadata_bytes,
                max_addressed_to=limits.max_addressed_to,
            )
        except (ValidationError, ValueError) as exc:
            raise InputError(f"{t.where} (turn id {t.id!r}): {refusal_reason(exc)}") from None


def load_sample() -> list[dict[str, Any]]:
    """The bundled sample conversation (written for this project), as raw JSONL records."""
    raw = resources.files("uniko_memory.data").joinpath("sample_conversation.jsonl").read_text("utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def sample_text() -> str:
    return resources.files("uniko_memory.data").joinpath("sample_conversation.jsonl").read_text("utf-8")


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → aware UTC datetime."""
    cleaned = " ".join(str(text).replace(",", " ").split())
    try:
        return datetime.strptime(cleaned, "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(
            f"unrecognised LoCoMo date {text!r} (expected e.g. '1:56 pm on 8 May, 2023')"
        ) from None


def _parse_time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: 'at' must be an ISO 8601 string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: 'at' is not an ISO 8601 time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _names(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{where}: {key!r} must be a name or a list of names")


def parse_jsonl(text: str, agent: str) -> list[InputTurn]:
    """The JSONL turn format (see the module docstring)."""
    out: list[InputTurn] = []
    per_session: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(rec, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        unknown = sorted(set(rec) - _JSONL_KEYS)
        if unknown:
            raise InputError(
                f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_JSONL_KEYS))}"
            )
        for key in ("session", "sender", "text"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise InputError(f"{where}: {key!r} is missing or not a non-empty string")
        tid = rec.get("id")
        if tid is not None and (
            not isinstance(tid, str | int) or isinstance(tid, bool) or not str(tid).strip()
        ):
            raise InputError(f"{where}: 'id' must be a non-empty string or integer")
        session = rec["session"]
        n = per_session.get(session, 0)
        per_session[session] = n + 1
        out.append(
            InputTurn(
                agent=agent,
                session=session,
                sender=rec["sender"],
                text=rec["text"],
                at=_parse_time(rec.get("at"), where),
                to=_names(rec.get("to"), where, "to"),
                id=str(tid) if tid is not None else f"{session}#{n}",
                where=where,
            )
        )
    return out


def parse_locomo(data: Any, agent: str | None = None) -> list[InputTurn]:
    """LoCoMo conversations (see the module docstring); annotations (qa, summaries) are ignored."""
    samples = data if isinstance(data, list) else [data]
    out: list[InputTurn] = []
    prefix = agent is not None and len(samples) > 1
    for ci, sample in enumerate(samples):
        where0 = f"conversation {ci}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InputError(f"{where0}: expected an object with a 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"conv-{ci}")
        where0 = f"conversation {ci} ({sample_id})"
        conv = sample["conversation"]
        speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
        if not all(isinstance(s, str) and s.strip() for s in speakers):
            raise InputError(f"{where0}: 'speaker_a' and 'speaker_b' must be names")
        sessions = []
        for key, value in conv.items():
            m = _LOCOMO_SESSION.fullmatch(key)
            if m and isinstance(value, list) and value:
                sessions.append((int(m.group(1)), key, value))
        if not sessions:
            raise InputError(f"{where0}: no session_<n> with turns")
        for _n, key, raw_turns in sorted(sessions):
            date = conv.get(f"{key}_date_time")
            if not isinstance(date, str):
                raise InputError(f"{where0}: {key} has no {key}_date_time")
            try:
                start = parse_locomo_date(date)
            except ValueError as exc:
                raise InputError(f"{where0}: {key}_date_time: {exc}") from None
            for i, rt in enumerate(raw_turns):
                where = f"{where0} {key} turn {i}"
                if not isinstance(rt, dict):
                    raise InputError(f"{where}: expected an object")
                speaker, text, dia_id = rt.get("speaker"), rt.get("text", ""), rt.get("dia_id")
                if not isinstance(speaker, str) or not speaker.strip():
                    raise InputError(f"{where}: 'speaker' is missing")
                if not isinstance(text, str):
                    raise InputError(f"{where}: 'text' must be a string")
                if not isinstance(dia_id, str) or not dia_id.strip():
                    raise InputError(f"{where}: 'dia_id' is missing")
                caption = rt.get("blip_caption")
                if caption:
                    text = f"{text} [shares a photo: {caption}]".strip()
                out.append(
                    InputTurn(
                        agent=agent or sample_id,
                        session=f"{sample_id}/{key}" if prefix else key,
                        sender=speaker,
                        text=text,
                        at=start + i * LOCOMO_TURN_STEP,
                        to=[s for s in speakers if s != speaker],
                        id=f"{sample_id}:{dia_id}" if prefix else dia_id,
                        where=where,
                    )
                )
    return out


def sniff_format(text: str) -> str:
    """``locomo`` for a JSON list / an object with ``conversation``; ``jsonl`` otherwise."""
    head = text.lstrip()[:1]
    if head == "[":
        return "locomo"
    if head == "{":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            return "jsonl"
        return "locomo" if isinstance(whole, dict) and "conversation" in whole else "jsonl"
    return "jsonl"


def read_turns(path: Path, fmt: str = "auto", agent: str | None = None) -> list[InputTurn]:
    """Read and check a whole input file; raises ``InputError`` naming the problem."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if fmt == "auto":
        fmt = sniff_format(text)
    if fmt == "locomo":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}: line {exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        try:
            turns = parse_locomo(data, agent)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
    elif fmt == "jsonl":
        try:
            turns = parse_jsonl(text, agent or "default")
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
    else:
        raise InputError(f"unknown format {fmt!r}; use auto, locomo or jsonl")
    if not turns:
        raise InputError(f"{path}: no turns found")
    return turns


# ---------------------------------------------------------------------------------- progress
class _Progress:
    """A rich progress bar when ``rich`` is installed (the ``cli`` extra); plain lines otherwise."""

    def __init__(self, total: int, label: str, *, plain: bool = False) -> None:
        self.total = total
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        self._last = 0.0
        self._label = label
        if not plain:
            try:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
            except ImportError:
                pass
            else:
                self._bar = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    transient=False,
                )
        if self._bar is None:
            self._every = max(1, total // 10)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=self.total)
        return self

    def advance(self, n: int = 1, description: str | None = None) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n, **({"description": description} if description else {}))
        elif self.done % self._every == 0 or self.done == self.total:
            _out(f"  {self._label}: {self.done}/{self.total} turns")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


# ---------------------------------------------------------------------------------- ingest
@dataclass(frozen=True)
class RejectedTurn:
    """A turn the engine refused: where it is in the input, and why."""

    position: int  # index in the input, 0-based
    where: str  # "line 12", "conv-26 session_3 turn 4"
    id: str
    agent: str
    session: str
    reason: str

    def describe(self) -> str:
        return f"{self.where} (turn id {self.id!r}): {self.reason}"


@dataclass
class IngestSummary:
    turns: int = 0
    stored: int = 0
    replays: int = 0
    sessions: int = 0
    seconds: float = 0.0
    #: Turns refused and skipped (the rest was stored), in input order.
    rejected: list[RejectedTurn] = field(default_factory=list)


async def ingest_turns(
    uni: Any,
    turns: Sequence[InputTurn],
    *,
    finalize: bool = True,
    progress: Callable[[InputTurn], None] | None = None,
    strict: bool = False,
) -> IngestSummary:
    """Observe every turn (one transaction each), flush P3/P7a, finalise the touched sessions.

    A turn the engine refuses (a ``ValidationError`` or ``IdConflict`` about that turn) is
    recorded in ``rejected`` and the next one follows; with ``strict`` it raises ``InputError``
    naming its record instead. Any other error (the store failing, the engine closing) stops the
    run: it is not about one turn.
    """
    from .ingest.bulk import TURN_REFUSALS, refusal_reason

    summary = IngestSummary(turns=len(turns))
    t0 = time.perf_counter()
    touched: dict[tuple[str, str], None] = {}
    for position, t in enumerate(turns):
        try:
            result = await uni.agent(t.agent).session(t.session).observe(t.turn())
        except TURN_REFUSALS as exc:
            rejected = RejectedTurn(position, t.where, t.id, t.agent, t.session, refusal_reason(exc))
            if strict:
                raise InputError(rejected.describe()) from None
            summary.rejected.append(rejected)
            if progress is not None:
                progress(t)
            continue
        summary.replays += result.was_replay
        summary.stored += not result.was_replay
        touched[(t.agent, t.session)] = None
        if progress is not None:
            progress(t)
    for agent in dict.fromkeys(a for a, _ in touched):
        await uni.agent(agent).flush()
    if finalize:
        for agent, session in touched:
            await uni.agent(agent).session(session).finalize()
    summary.sessions = len(touched)
    summary.seconds = time.perf_counter() - t0
    return summary


async def _print_tiers(store: Any, agents: Sequence[str]) -> None:
    for agent in agents:
        _out(f"agent {agent}")
        for tier in Tier:
            n = await store.count(agent, tier)
            if n:
                _out(f"  {tier.value:<20} {n}")


#: Rejected turns listed one by one on stderr; beyond this many, only their count.
MAX_REJECTED_SHOWN = 50


async def ingest(
    path: Path,
    db: Path,
    agent: str | None,
    fmt: str,
    finalize: bool,
    plain: bool = False,
    strict: bool = False,
) -> int:
    from .config import UnikoConfig
    from .facade import Uniko

    # Fail on a malformed file before opening anything; with --strict, on a turn the engine
    # would refuse too (otherwise such a turn is reported and skipped).
    turns = read_turns(path, fmt, agent)
    config = UnikoConfig()
    if strict:
        check_turns(turns, config.ingest)
    agents = list(dict.fromkeys(t.agent for t in turns))
    _out(f"read {len(turns)} turns for {len(agents)} agent(s) from {path}")
    uni = await Uniko.open(db, config)
    try:
        with _Progress(len(turns), "ingest", plain=plain) as bar:
            summary = await ingest_turns(
                uni,
                turns,
                finalize=finalize,
                progress=lambda t: bar.advance(1, f"ingest {t.agent}"),
                strict=strict,
            )
        rate = summary.turns / summary.seconds if summary.seconds else 0.0
        _out(
            f"stored {summary.stored} turns ({summary.replays} already stored) in {summary.sessions} sessions "
            f"in {summary.seconds:.1f} s ({rate:.0f} turns/s)" + ("; sessions finalised" if finalize else "")
        )
        _out(f"store {db}")
        await _print_tiers(uni.kb.store, agents)
    finally:
        await uni.close()
    if summary.rejected:
        for r in summary.rejected[:MAX_REJECTED_SHOWN]:
            _err(f"uniko ingest: rejected {r.describe()}")
        more = len(summary.rejected) - MAX_REJECTED_SHOWN
        _err(
            f"uniko ingest: {len(summary.rejected)} of {summary.turns} turns rejected and skipped"
            + (f" ({more} not listed)" if more > 0 else "")
            + "; the rest was stored (--strict stores nothing when a turn is refused)"
        )
        return 1
    return 0


async def ingest_doc(
    files: Sequence[Path], db: Path, agent: str, mime_type: str | None, session: str | None, visibility: str
) -> int:
    from .facade import Uniko

    failed = 0
    uni = await Uniko.open(db)
    try:
        memory = uni.agent(agent)
        for f in files:
            r = await memory.ingest_artifact(f, mime_type=mime_type, session=session, visibility=visibility)
            pages = f", {r.page_count} pages" if r.page_count is not None else ""
            state = "already stored" if r.was_replay else f"{r.chunks} chunks{pages}"
            _out(f"{f}: {r.artifact_node_id} ({r.mime_type}, {r.size:,} bytes) {state}")
            if r.secrets_redacted:
                _out(f"  masked {r.secrets_redacted} secret(s); original bytes stored: {r.bytes_stored}")
            if r.extraction_failed:
                failed += 1
                _err(f"  stored, but its text could not be extracted: {r.extraction_error}")
        _out(f"store {db}")
        await _print_tiers(uni.kb.store, [agent])
    finally:
        await uni.close()
    return 1 if failed else 0


# ---------------------------------------------------------------------------------- bench
BENCH_ROOT_ENV = "UNIKO_BENCH_ROOT"
_BENCH_MARKERS = (
    "benchmarks/run_bench.py",
    "benchmarks/harness/run.py",
    "benchmarks/harness/uniko_system.py",
)
BENCH_MISSING = f"""\
the benchmark harness is not available: it is not part of the installed package (a wheel ships
only uniko_memory) but lives in benchmarks/ of a uniko-memory source checkout. Run `uniko bench`
inside a checkout (or set {BENCH_ROOT_ENV}=<checkout>) with its dev dependencies installed
(`uv sync`), or run `python benchmarks/run_bench.py` there."""


class BenchUnavailable(RuntimeError):
    """The benchmark harness cannot be found or loaded; the message says what to do."""


def is_bench_root(path: Path) -> bool:
    return all((path / m).is_file() for m in _BENCH_MARKERS)


def find_bench_root(
    *, env: dict[str, str] | None = None, module_file: str | Path = __file__, cwd: Path | None = None
) -> Path:
    """The checkout holding ``benchmarks/run_bench.py``: ``$UNIKO_BENCH_ROOT`` if set, else the
    checkout this module lives in (``src/uniko_memory/cli.py``), else the current directory or a
    parent. Raises ``BenchUnavailable``."""
    environ = os.environ if env is None else env
    explicit = environ.get(BENCH_ROOT_ENV)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if not is_bench_root(root):
            raise BenchUnavailable(f"{BENCH_ROOT_ENV}={explicit}: no benchmarks/run_bench.py harness there")
        return root
    here = (cwd or Path.cwd()).resolve()
    for candidate in (Path(module_file).resolve().parents[2], here, *here.parents):
        if is_bench_root(candidate):
            return candidate
    raise BenchUnavailable(BENCH_MISSING)


def load_bench(root: Path) -> Any:
    """Import ``benchmarks.run_bench`` from the checkout at ``root``."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("benchmarks.run_bench")
    except ImportError as exc:
        raise BenchUnavailable(
            f"cannot load the harness from {root / 'benchmarks'}: {exc}; "
            "install the dev dependencies of the checkout (`uv sync`)"
        ) from None
    loaded = Path(module.__file__ or "").resolve()
    if loaded != (root / "benchmarks" / "run_bench.py").resolve():
        raise BenchUnavailable(
            f"another 'benchmarks' package is already imported ({loaded}); cannot load {root}"
        )
    return module


def bench(argv: Sequence[str]) -> int:
    """``uniko bench ARGS`` = ``python benchmarks/run_bench.py ARGS`` (same options, same exit codes)."""
    try:
        run_bench = load_bench(find_bench_root())
    except BenchUnavailable as exc:
        _err(f"uniko bench: {exc}")
        return 2
    rc: int = run_bench.main(list(argv), prog="uniko bench")
    return rc


# ---------------------------------------------------------------------------------- demo, stats
async def demo(path: Path | None) -> None:
    """Ingest the bundled sample through the facade and show what each tier now holds."""
    from .facade import Uniko

    t_start = time.perf_counter()
    turns = parse_jsonl(sample_text(), DEMO_AGENT)
    with tempfile.TemporaryDirectory() as tmp:
        db = path or Path(tmp) / "demo.db"
        uni = await Uniko.open(db)
        try:
            agent = uni.agent(DEMO_AGENT)
            latencies = []
            t0 = time.perf_counter()
            for t in turns:
                r = await agent.session(t.session).observe(t.turn())
                latencies.append(r.timings.total_ms if r.timings else 0.0)
            ingest_ms = (time.perf_counter() - t0) * 1000
            await agent.flush()
            sessions = list(dict.fromkeys(t.session for t in turns))
            reports = [await agent.session(s).finalize() for s in sessions]
            latencies.sort()
            _out(
                f"stored {len(turns)} turns in {len(sessions)} sessions in {ingest_ms:.0f} ms "
                f"(P1+P2 median {latencies[len(latencies) // 2]:.1f} ms/turn, first turn loads the models) at {db}"
            )
            store = uni.kb.store
            for tier in Tier:
                n = await store.count(DEMO_AGENT, tier)
                if n:
                    _out(f"  {tier.value:<20} {n}")
            transcript = sum(r.transcript_chunks for r in reports)
            obs_chunks = sum(r.observation_chunks for r in reports)
            _out(
                f"\nfinalised {len(sessions)} sessions: {transcript} transcript chunks, {obs_chunks} observation chunks"
            )

            observations = await store.find(DEMO_AGENT, Tier.OBSERVATION, limit=6, order_by="time")
            _out("\nobservations (rule-based, no LLM):")
            for o in observations:
                assert isinstance(o, Observation)
                when = f"  [{o.anchor_lo:%d %b %Y}]" if o.anchor_lo else ""
                _out(f"  - {o.content}{when}")
            chunks = await store.find(
                DEMO_AGENT, Tier.CHUNK, Eq("chunk_type", "session"), limit=1, order_by="time"
            )
            if chunks:
                c = chunks[0]
                assert isinstance(c, Chunk)
                first = c.text.split("\n", 1)[0]
                _out(
                    f"\ntranscript chunk 0 of {c.heading}: {len(c.covered_ids)} turns, {c.token_count} tokens"
                )
                _out(f"  {first[:100]}{'...' if len(first) > 100 else ''}")

            for q in DEMO_QUERIES:
                t0 = time.perf_counter()
                bundle = await agent.recall(q, token_budget=200, limit=5)
                phase = "1" if bundle.phase1_only else "2" if bundle.phase2_only else "3"
                _out(
                    f"\n? {q}   (recall {(time.perf_counter() - t0) * 1000:.0f} ms, exited after phase {phase}, "
                    f"{bundle.total_tokens} tokens, coverage {bundle.coverage:.2f})"
                )
                for item in bundle.items:
                    _out(f"  {item.score:.2f} {item.kind:<11} {item.rendered}")
            _out(f"\ndemo done in {time.perf_counter() - t_start:.1f} s")
        finally:
            await uni.close()


async def stats(path: Path) -> None:
    store = await EmbeddedStore.open(path)
    try:
        await _print_tiers(store, await store.agents())
    finally:
        await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # every later argument (--help included) belongs to the harness
        return bench(argv[1:])
    parser = argparse.ArgumentParser(prog="uniko", description="uniko-memory command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "bench",
        add_help=False,
        help="run the retrieval benchmark (benchmarks/run_bench.py; needs a source checkout); "
        "`uniko bench --help` lists its options",
    )
    p_demo = sub.add_parser("demo", help="ingest the bundled sample conversation and show what was stored")
    p_demo.add_argument("--path", type=Path, default=None, help="keep the store at this path")
    p_stats = sub.add_parser("stats", help="count nodes per agent and tier in a store")
    p_stats.add_argument("path", type=Path)
    p_ing = sub.add_parser(
        "ingest",
        help="ingest a LoCoMo JSON file or a JSONL file of turns",
        description="Ingest conversations into an embedded store (see `uniko_memory.cli` for the formats).",
        epilog="A turn the engine refuses (empty, too long, addressed to too many people, an id already "
        "stored with other content) is reported on stderr with its line or record and skipped; the rest is "
        "stored. Exit status: 0 every turn stored (or already stored), 1 some turns rejected and the rest "
        "stored, 2 the file is malformed, or with --strict a turn would be refused (nothing stored).",
    )
    p_ing.add_argument("file", type=Path)
    p_ing.add_argument(
        "--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})"
    )
    p_ing.add_argument(
        "--agent",
        default=None,
        help="agent to store into (JSONL default: 'default'; LoCoMo default: each conversation's sample_id)",
    )
    p_ing.add_argument("--format", choices=("auto", "locomo", "jsonl"), default="auto")
    p_ing.add_argument(
        "--finalize",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="finalise every touched session afterwards (transcript chunks, summary); default on",
    )
    p_ing.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p_ing.add_argument(
        "--strict",
        action="store_true",
        help="check every turn first and store nothing if one would be refused (default: report and skip it)",
    )
    p_doc = sub.add_parser(
        "ingest-doc",
        help="store documents (text, Markdown, HTML, PDF) as artifacts",
        description="Store documents as artifacts with searchable chunks (see docs/artifacts.md).",
    )
    p_doc.add_argument("files", type=Path, nargs="+")
    p_doc.add_argument("--agent", required=True, help="agent to store into")
    p_doc.add_argument(
        "--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})"
    )
    p_doc.add_argument("--mime-type", default=None, help="the type of every file (default: from its suffix)")
    p_doc.add_argument("--session", default=None, help="attach the documents to this session")
    p_doc.add_argument("--visibility", default="public", help="public (default), private:P, team:T or org:O")
    args = parser.parse_args(argv)
    if args.command == "demo":
        asyncio.run(demo(args.path))
    elif args.command == "stats":
        if not args.path.exists():
            _err(f"uniko stats: no store at {args.path}")
            return 2
        asyncio.run(stats(args.path))
    elif args.command == "ingest":
        from .errors import UnikoError

        try:
            return asyncio.run(
                ingest(args.file, args.path, args.agent, args.format, args.finalize, args.plain, args.strict)
            )
        except InputError as exc:
            _err(f"uniko ingest: {exc}")
            return 2
        except UnikoError as exc:
            _err(f"uniko ingest: {type(exc).__name__}: {exc}")
            return 1
    elif args.command == "ingest-doc":
        from .errors import UnikoError

        try:
            return asyncio.run(
                ingest_doc(args.files, args.path, args.agent, args.mime_type, args.session, args.visibility)
            )
        except UnikoError as exc:
            _err(f"uniko ingest-doc: {type(exc).__name__}: {exc}")
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
