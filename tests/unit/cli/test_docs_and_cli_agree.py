"""Issue 40 item 6: the docs and the command line agree, and the errors a new user meets say what
to do. ``--path`` is taken by every command that opens a store, before or after the command name;
a locked store names the read-only way in, and says whether this process or another holds it; a
rerun of the demo reports replays as replays; the demo's lock file is ignored by git; a wrong
keyword names the right one; a budget too small for any memory is refused, not answered with ``''``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError as PydanticValidationError

from uniko_memory import Turn, Uniko, UnikoConfig, cli
from uniko_memory.errors import ConfigError, StoreLocked, ValidationError
from uniko_memory.recall import RecallConfig
from uniko_memory.recall.assemble import Charges
from uniko_memory.store.embedded import EmbeddedStore

REPO = Path(__file__).resolve().parents[3]
#: Every command that opens a store (``bench`` builds its own).
STORE_COMMANDS = (
    "demo",
    "stats",
    "ingest",
    "ingest-doc",
    "recall",
    "list",
    "show",
    "sessions",
    "export",
    "import",
    "forget",
    "mcp",
    "inspect",
    "audit",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("agree") / "agree.db"
    uni = Uniko.open_sync(db)
    try:
        s = uni.agent("team").session("standup")
        s.observe_sync(Turn(sender="ana", content="The release moves to Friday.", addressed_to="bot"))
        s.observe_sync(Turn(sender="ben", content="I adopted a cat named Biscuit.", addressed_to="ana"))
        uni.agent("team").flush_sync()
    finally:
        uni.close_sync()
    return db


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------------------------------ --path
@pytest.mark.parametrize("command", STORE_COMMANDS)
def test_every_store_command_documents_path(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    assert "--path" in capsys.readouterr().out


def test_stats_takes_path_after_or_before_the_command(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README says every command takes ``--path DB``: ``uniko stats --path DB`` was refused."""
    expected = _run(capsys, ["stats", str(store)])
    assert expected[0] == 0 and "agent team" in expected[1]
    assert _run(capsys, ["stats", "--path", str(store)]) == expected
    assert _run(capsys, [f"--path={store}", "stats"]) == expected
    assert _run(capsys, ["--path", str(store), "stats"]) == expected
    assert _run(capsys, ["stats", str(store), "--path", str(store)]) == expected  # the same store twice
    rc, _, err = _run(capsys, ["stats", str(store), "--path", str(store.with_name("other.db"))])
    assert rc == 2 and "two stores given" in err


def test_path_before_the_command_reaches_every_command(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = _run(capsys, ["sessions", "--path", str(store), "--json"])
    assert after[0] == 0 and "standup" in after[1]
    assert _run(capsys, ["--path", str(store), "sessions", "--json"]) == after
    rc, out, _ = _run(capsys, ["--path", str(store), "recall", "What is the cat called?", "--json"])
    assert rc == 0 and "Biscuit" in out
    rc, _, err = _run(capsys, ["--path", str(store), "sessions", "--path", str(store.with_name("b.db"))])
    assert rc == 2 and "--path is given twice" in err
    rc, _, err = _run(capsys, ["--path", str(store), "bench"])
    assert rc == 2 and "takes no --path" in err


def test_stats_on_a_missing_store_reports_it_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = _run(capsys, ["stats", "--path", str(tmp_path / "none.db")])
    assert rc == 2 and "no store at" in err
    assert not (tmp_path / "none.db").exists()


# ------------------------------------------------------------------------------- StoreLocked
def test_a_locked_store_names_the_read_only_way(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``StoreLocked`` from the CLI said only "close it there first"; it names ``--read-only`` now,
    and ``--read-only`` reads beside the writer."""
    writer = Uniko.open_sync(store)
    try:
        rc, _, err = _run(capsys, ["recall", "What is the cat called?", "--path", str(store)])
        assert rc == 1 and "StoreLocked" in err
        assert "add --read-only to read the store beside the process that holds it" in err
        assert "embedded_read_only" in err  # the library's own read-only open
        rc, out, _ = _run(capsys, ["recall", "What is the cat called?", "--path", str(store), "--read-only"])
        assert rc == 0 and "Biscuit" in out
        rc, _, err = _run(capsys, ["stats", "--path", str(store)])
        assert rc == 1 and "--read-only" in err
        rc, out, _ = _run(capsys, ["stats", "--path", str(store), "--read-only"])
        assert rc == 0 and "agent team" in out
        for argv in (["list", "--tier", "message"], ["sessions"], ["export", "-o", "-"]):
            assert _run(capsys, [*argv, "--path", str(store), "--read-only"])[0] == 0, argv
        # a command that writes says that one process writes a store, and where reading works
        rc, _, err = _run(capsys, ["demo", "--path", str(store)])
        assert rc == 1 and "`uniko demo` writes" in err and "--read-only" in err and "Traceback" not in err
    finally:
        writer.close_sync()


async def test_a_second_open_in_this_process_says_this_process(tmp_path: Path) -> None:
    db = tmp_path / "twice.db"
    first = await EmbeddedStore.open(db)
    try:
        with pytest.raises(StoreLocked, match="already open in this process") as caught:
            await EmbeddedStore.open(db)
        assert "another process" not in str(caught.value)
        assert "embedded_read_only" in str(caught.value)
    finally:
        await first.close()
    again = await EmbeddedStore.open(db)  # once closed, it opens (a stale record says nothing)
    await again.close()


def test_an_open_in_another_process_says_another_process(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    child = textwrap.dedent(
        f"""
        import asyncio, sys
        from uniko_memory.store.embedded import EmbeddedStore

        async def main():
            store = await EmbeddedStore.open({str(db)!r})
            print("ready", flush=True)
            sys.stdin.readline()
            await store.close()

        asyncio.run(main())
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLocked, match="open in another process") as caught:
            asyncio.run(EmbeddedStore.open(db))
        assert "this process" not in str(caught.value)
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(30)


# -------------------------------------------------------------------------------- make demo
def test_the_demo_lock_file_is_ignored_by_git() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    for name in ("uniko-demo.db.lock", "uniko.db.lock", "uniko-demo.db", "uniko-demo.db-wal"):
        ignored = subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO, check=False)
        assert ignored.returncode == 0, f"{name} is not ignored by .gitignore"


# ---------------------------------------------------------------------- wrong keyword names
@pytest.mark.parametrize(
    ("wrong", "right"),
    [
        ("top_k", "'limit'"),
        ("k", "'limit'"),
        ("budget", "'token_budget'"),
        ("max_tokens", "'token_budget'"),
        ("user_id", "'viewer'"),
        ("token_budgt", "'token_budget'"),
        ("session_id", "'sessions'"),
    ],
)
async def test_a_wrong_recall_keyword_names_the_right_one(uni: Uniko, wrong: str, right: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown argument '{wrong}'") as caught:
        await uni.agent("a").recall("q", **{wrong: 5})
    assert f"did you mean {right}" in str(caught.value)
    with pytest.raises(ConfigError, match=f"did you mean {right}"):
        RecallConfig().with_options(**{wrong: 5})


def test_an_unknown_keyword_with_no_likely_meaning_lists_the_real_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown argument 'zzz' for RecallConfig; its arguments are .*token_budget"
    ):
        RecallConfig().with_options(zzz=1)
    with pytest.raises(ConfigError, match="unknown argument 'top_k' for RecallTuning; did you mean 'limit'"):
        UnikoConfig.build({"recall": {"top_k": 3}})


@pytest.mark.parametrize(
    ("wrong", "right"),
    [("role", "'sender'"), ("user_id", "'sender'"), ("text", "'content'"), ("timestamp", "'at'")],
)
def test_a_wrong_turn_keyword_names_the_right_one(wrong: str, right: str) -> None:
    fields = {"sender": "ana", "content": "hello"}
    fields.pop({"role": "sender", "user_id": "sender", "text": "content"}.get(wrong, ""), None)
    with pytest.raises(
        PydanticValidationError, match=f"unknown argument '{wrong}' for Turn; did you mean {right}"
    ):
        Turn(**fields, **{wrong: "x"})
    with pytest.raises(PydanticValidationError, match=r"the session is chosen by agent\.session"):
        Turn(sender="ana", content="hi", session_id="s1")


# ---------------------------------------------------------------- a budget too small for memory
async def test_a_budget_below_the_frame_is_refused_with_the_minimum(uni: Uniko) -> None:
    """``token_budget=5`` returned ``''`` with no word of why."""
    agent = uni.agent("a")
    await agent.session("s").observe(Turn(sender="ana", content="My cat is called Biscuit."))
    await agent.flush(timeout=30)
    frame = Charges.of(uni.kb.token_counter, "grouped").frame
    with pytest.raises(ValidationError, match=f"token_budget=5 cannot hold any memory.*{frame} tokens") as e:
        await agent.recall("cat", token_budget=5)
    assert f"token_budget={frame + 1} or more" in str(e.value)
    with pytest.raises(ValidationError, match="cannot hold any memory"):
        await agent.recall("cat", token_budget=frame)
    bundle = await agent.recall("cat", token_budget=frame + 40)
    assert bundle.render() and bundle.total_tokens <= frame + 40


def test_the_cli_says_why_a_tiny_budget_recalls_nothing(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _run(capsys, ["recall", "What is the cat called?", "--path", str(store), "--budget", "5"])
    assert rc == 2 and out == "" and "cannot hold any memory" in err and "or more" in err
