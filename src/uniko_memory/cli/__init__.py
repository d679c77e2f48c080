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

Every command that opens a store takes ``--path DB`` after the command name or before it
(``uniko --path DB stats``; ``stats DB`` still works). The commands that only read (``recall``,
``list``, ``show``, ``sessions``, ``export``, ``stats``) take ``--read-only``: a reader beside the
process that writes the store. A command that finds the store taken (``StoreLocked``) says how to
read it anyway (``store_access.locked_hint``).

Looking inside a store (each with ``--path``, ``--agent`` (optional when the store holds one),
``--json``; bad input exits 2 and writes nothing): ``recall "question"`` (the rendered bundle;
``--budget``, ``--explain``, ``--session``, ``--participant``, ``--viewer``), ``list`` (one tier,
``--session`` / ``--participant`` filters, ``--limit`` / ``--offset`` paging), ``show ID`` (a node
and its provenance chain down to the Messages), ``sessions``, ``export [-o FILE]`` / ``import FILE``
(one agent as JSONL, ``uniko_memory.transfer``; standard output without ``-o``), ``forget`` (a
turn, a session or a participant; ``--hard``; nothing happens without ``--yes``).

The command's modules: ``formats`` (the input files), ``output`` (printing, progress),
``store_access`` and ``nodes_view`` (what the look-inside commands share), one ``cmd_*`` module per
command or group (``cmd_ingest``: ``ingest``, ``ingest-doc``; ``cmd_bench``; ``cmd_demo``:
``demo``, ``stats``; ``cmd_recall``, ``cmd_list``, ``cmd_show``, ``cmd_sessions``, ``cmd_export``,
``cmd_import``, ``cmd_forget``, each with a ``register(sub)``) and ``parser`` (``main``: the
argument parser); the entry point is ``uniko_memory.cli:main``.
"""

from .cmd_bench import (
    BENCH_MISSING,
    BENCH_ROOT_ENV,
    BenchUnavailable,
    bench,
    find_bench_root,
    is_bench_root,
    load_bench,
)
from .cmd_demo import DEMO_AGENT, DEMO_QUERIES, demo, stats
from .cmd_ingest import (
    DEFAULT_PATH,
    MAX_REJECTED_SHOWN,
    IngestSummary,
    RejectedTurn,
    ingest,
    ingest_doc,
    ingest_turns,
)
from .formats import (
    LOCOMO_TURN_STEP,
    InputError,
    InputTurn,
    check_turns,
    load_sample,
    parse_jsonl,
    parse_locomo,
    parse_locomo_date,
    read_turns,
    sample_text,
    sniff_format,
)
from .output import _Progress
from .parser import main

__all__ = [
    "BENCH_MISSING",
    "BENCH_ROOT_ENV",
    "DEFAULT_PATH",
    "DEMO_AGENT",
    "DEMO_QUERIES",
    "LOCOMO_TURN_STEP",
    "MAX_REJECTED_SHOWN",
    "BenchUnavailable",
    "IngestSummary",
    "InputError",
    "InputTurn",
    "RejectedTurn",
    "_Progress",
    "bench",
    "check_turns",
    "demo",
    "find_bench_root",
    "ingest",
    "ingest_doc",
    "ingest_turns",
    "is_bench_root",
    "load_bench",
    "load_sample",
    "main",
    "parse_jsonl",
    "parse_locomo",
    "parse_locomo_date",
    "read_turns",
    "sample_text",
    "sniff_format",
    "stats",
]
