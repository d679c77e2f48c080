"""After a forget returns, the forgotten words and names are in no table and in no byte of the files.

Issue 16, defect 9: a soft ``forget_participant`` kept the person's name (their Participant, their
Entity, the ``sender_name`` of their redacted turns), and forgotten text stayed in the ``-wal`` file
(and in freed pages, FTS segments) while the store was open. Checked on the embedded store while it
is still open: every row of every table (FTS shadow tables and index terms included) through a
second connection, and the raw bytes of the database file and its WAL.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.reliability.conftest import CONFIG
from tests.unit.ingest._support import FakeEmbedder
from uniko_memory.config import UnikoConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

AGENT = "traces"
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
#: Erin's words (and their FTS stems); her name is searched for as a whole word.
WORDS = ("quetzalbird", "marmaduk", "pottery")
NAME = re.compile(rb"\berin\b")


def turns(named: bool) -> list[tuple[str, str, str]]:
    """(session, sender, text); ``named``: Dave also talks about Erin by name."""
    dave = "Erin told me she moved to a new flat." if named else "I repaired the garden fence."
    return [
        ("s1", "Erin", "I adopted a parrot named Quetzalbird last spring."),
        ("s1", "Dave", dave),
        ("s1", "Erin", "My favourite band is Marmaduke Spoons."),
        ("s1", "Dave", "I am going to Lisbon next week."),
        ("s2", "Erin", "I started a pottery class on Tuesdays."),
        ("s2", "Dave", "My dog is called Rex and he loves the beach."),
    ]


async def open_built(db: Path, named: bool) -> Uniko:
    uni = await Uniko.open(db, UnikoConfig.build(CONFIG), embedder=FakeEmbedder())
    agent = uni.agent(AGENT)
    for i, (session, who, text) in enumerate(turns(named)):
        to = ["Dave"] if who == "Erin" else ["Erin"]
        await agent.session(session).observe(
            Turn(id=f"t{i}", sender=who, content=text, at=T0 + timedelta(minutes=i), addressed_to=to)
        )
    await agent.flush()
    for s in ("s1", "s2"):
        await agent.session(s).finalize()
    await agent.consolidate()
    return uni


def wal_size(db: Path) -> int:
    return Path(f"{db}-wal").stat().st_size


def in_files(db: Path, words: tuple[str, ...], name: bool) -> list[str]:
    found = []
    for f in (db, Path(f"{db}-wal")):
        raw = f.read_bytes().lower() if f.exists() else b""
        found += [f"{f.name}: {w}" for w in words if w.encode() in raw]
        if name and NAME.search(raw):
            found.append(f"{f.name}: erin")
    return found


def in_tables(db: Path, words: tuple[str, ...], name: bool) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, fts, row)")
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        found = []
        for table in [*tables, "temp.terms"]:
            for row in conn.execute(f"SELECT * FROM {table}"):
                text = repr(row).lower()
                found += [f"{table}: {w}" for w in words if w in text]
                if name and re.search(r"\berin\b", text):
                    found.append(f"{table}: erin in {text[:100]}")
        return found
    finally:
        conn.close()


@pytest.mark.parametrize("named", [False, True], ids=["not-named-by-others", "named-by-others"])
async def test_soft_forget_leaves_no_name_and_no_words_in_the_files(tmp_path: Path, named: bool) -> None:
    db = tmp_path / "m.db"
    uni = await open_built(db, named)
    try:
        assert in_tables(db, WORDS, True) and in_files(db, WORDS, True)  # there before
        # Soft: redacted, not deleted. Statements about her by others only with ``about``.
        report = await uni.agent(AGENT).forget_participant("Erin", about=named)
        assert report.messages == 3 + named and report.participants == 1
        assert in_tables(db, WORDS, True) == []
        assert in_files(db, WORDS, True) == []  # checkpointed: the -wal holds nothing either
        assert wal_size(db) == 0
        # The rest of the memory is intact.
        assert (await uni.agent(AGENT).recall("What is Dave's dog called?")).items
    finally:
        await uni.close()


@pytest.mark.parametrize("api", ["forget_turn", "delete_turn"])
async def test_a_forgotten_turn_leaves_the_tables_and_the_wal_at_once(tmp_path: Path, api: str) -> None:
    db = tmp_path / "m.db"
    uni = await open_built(db, named=False)
    try:
        agent = uni.agent(AGENT)
        await getattr(agent, api)("s1", "t0")  # "... a parrot named Quetzalbird ..."
        assert in_tables(db, ("quetzalbird",), False) == []
        assert wal_size(db) == 0
        assert in_files(db, ("quetzalbird",), False) == []
    finally:
        await uni.close()
