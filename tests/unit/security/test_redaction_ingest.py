"""Redaction on the write path, through the facade: nothing stored, embedded or recalled holds a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ingest._support import messages, open_uni, turn
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import IdConflict
from uniko_memory.facade import Uniko
from uniko_memory.model import Chunk, Tier

from .conftest import CapturingEmbedder, files_bytes, stored_text

AGENT = "sec"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "Tr0ub4dor&3xyz"
CARD = "4111 1111 1111 1111"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYXJvbGluZSJ9.c2lnbmF0dXJlRkFLRWV4YW1wbGU"
KEY_BODY = "MIIEowIBAAKCAQEAFAKEexampleONLYnotAREALkey0123456789abcdef"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
META_SECRET = "Zx9kQ2mP7vR4tL8wN3bY6cH1jF5dG0sA"
SECRETS = [AWS, PASSWORD, CARD, CARD.replace(" ", ""), JWT, KEY_BODY, META_SECRET, "Tr0ub4dor"]

LINES = [
    ("Caroline", f"Caroline here: the deploy key for Lisbon is {AWS} and the db password: {PASSWORD}"),
    ("Melanie", f"Thanks Caroline. I booked the Lisbon trip with my card {CARD} yesterday."),
    ("Caroline", f"My session cookie was {JWT} when I logged into the garden club site."),
    ("Melanie", f"Here is the server key for the pottery class site:\n{PEM}\nPlease keep it safe."),
]


async def _talk(uni: Uniko, session: str = "s1") -> None:
    s = uni.agent(AGENT).session(session)
    for i, (speaker, text) in enumerate(LINES):
        meta = {"api_token": META_SECRET, "note": f"reminder: password={PASSWORD}", "topic": "travel"}
        await s.observe(turn(speaker, text, i, id=f"t{i}", metadata=meta))
    # A long turn, chunked at ingest, with the secret in the middle of it.
    filler = " ".join(
        f"Caroline planted tomatoes and basil in the garden in spring {2000 + k}." for k in range(20)
    )
    await s.observe(
        turn("Caroline", f"{filler} The alarm code password: {PASSWORD} works. {filler}", 9, id="long")
    )


def _assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked into {where}"


async def test_nothing_stored_embedded_or_recalled_holds_a_secret(tmp_path: Path) -> None:
    embedder = CapturingEmbedder()
    cfg = UnikoConfig.build(
        {"chunking": {"message_chunk_threshold": 64, "max_chunk_tokens": 64, "min_chunk_tokens": 8}}
    )
    uni = await Uniko.open(tmp_path / "memory.db", cfg, embedder=embedder)
    try:
        await _talk(uni)
        agent = uni.agent(AGENT)
        await agent.flush(timeout=60)
        report = await agent.session("s1").finalize()
        assert report.transcript_chunks >= 1
        await agent.consolidate()
        bundle = await agent.recall("What did Caroline say about the deploy key and the password for Lisbon?")
        bundle2 = await agent.recall("Which card did Melanie use for the Lisbon trip?")

        everything = await stored_text(uni, AGENT)
        _assert_clean(everything, "the store")
        assert "[REDACTED:aws_access_key]" in everything and "[REDACTED:private_key]" in everything
        msg_chunks = [
            c for c in await uni.kb.store.find(AGENT, Tier.CHUNK, limit=1000) if isinstance(c, Chunk)
        ]
        assert any(c.chunk_type == "message" and "[REDACTED:password]" in c.text for c in msg_chunks)
        [first, *_] = await messages(uni, AGENT)
        assert first.metadata == {
            "api_token": "[REDACTED:generic_secret]",
            "note": "reminder: password=[REDACTED:password]",
            "topic": "travel",
        }

        assert embedder.seen and any("[REDACTED:" in t for t in embedder.seen)
        _assert_clean("\n".join(embedder.seen), "the embedder's inputs")

        for b in (bundle, bundle2):
            assert len(b) > 0
            _assert_clean(b.render() + b.model_dump_json(), "a recall bundle")
        assert "[REDACTED:" in bundle.render() + bundle2.render()

        _assert_clean(files_bytes(tmp_path).decode("latin-1"), "the database files")
    finally:
        await uni.close()
    _assert_clean(files_bytes(tmp_path).decode("latin-1"), "the database files after close")


async def test_observe_reports_the_count_of_masked_secrets() -> None:
    uni = await open_uni()
    try:
        s = uni.agent(AGENT).session("s1")
        r = await s.observe(turn("Caroline", f"key {AWS}, password: {PASSWORD}", metadata={"pwd": "x1y2z3"}))
        assert r.secrets_redacted == 3
        plain = await s.observe(turn("Caroline", "I moved to Lisbon last year.", 1))
        assert plain.secrets_redacted == 0
    finally:
        await uni.close()


async def test_switching_redaction_off_keeps_text_verbatim() -> None:
    uni = await open_uni({"ingest": {"redact_secrets": False}})
    try:
        text = f"key {AWS} and password: {PASSWORD}"
        r = (
            await uni.agent(AGENT)
            .session("s1")
            .observe(turn("Caroline", text, metadata={"password": PASSWORD}))
        )
        assert r.secrets_redacted == 0
        [m] = await messages(uni, AGENT)
        assert m.content == text and m.metadata == {"password": PASSWORD}
    finally:
        await uni.close()


async def test_extra_patterns_from_config_apply_on_ingest() -> None:
    uni = await open_uni({"ingest": {"secret_patterns_extra": [r"EMP-\d{6}"]}})
    try:
        await uni.agent(AGENT).session("s1").observe(turn("Caroline", "My employee id is EMP-123456."))
        [m] = await messages(uni, AGENT)
        assert m.content == "My employee id is [REDACTED:custom]."
    finally:
        await uni.close()


async def test_replaying_a_turn_with_a_secret_is_a_noop() -> None:
    uni = await open_uni()
    try:
        s = uni.agent(AGENT).session("s1")
        raw = f"Caroline's key is {AWS}; password: {PASSWORD}"
        first = await s.observe(turn("Caroline", raw, 0, id="t1"))
        again = await s.observe(turn("Caroline", raw, 0, id="t1"))
        assert not first.was_replay and again.was_replay
        assert again.message_node_id == first.message_node_id and again.secrets_redacted == 2
        # Without an id the derived id comes from the masked text, so it is stable too.
        no_id = await s.observe(turn("Melanie", f"card {CARD}", 1))
        no_id_again = await s.observe(turn("Melanie", f"card {CARD}", 1))
        assert no_id_again.was_replay and no_id_again.message_node_id == no_id.message_node_id
        msgs = await messages(uni, AGENT)
        assert len(msgs) == 2
        _assert_clean(await stored_text(uni, AGENT), "the store")
        # The raw secret is not kept, so a replay is judged on the masked text: another secret in the
        # same place is the same masked turn (a no-op), while a change of the visible text conflicts.
        other = await s.observe(turn("Caroline", raw.replace(PASSWORD, "0therPassw0rd"), 0, id="t1"))
        assert other.was_replay
        with pytest.raises(IdConflict):
            await s.observe(turn("Caroline", raw.replace("Caroline's", "Melanie's"), 0, id="t1"))
    finally:
        await uni.close()


async def test_a_unit_of_turns_is_masked_turn_by_turn() -> None:
    uni = await open_uni()
    try:
        result = await (
            uni.agent(AGENT)
            .session("s1")
            .unit()
            .turn("Caroline", f"key {AWS}", id="u1")
            .turn("Melanie", "nothing secret here", id="u2")
            .turn("Caroline", f"password: {PASSWORD}", id="u3")
            .commit()
        )
        assert [r.secrets_redacted for r in result.results] == [1, 0, 1]
        assert [m.content for m in await messages(uni, AGENT)] == [
            "key [REDACTED:aws_access_key]",
            "nothing secret here",
            "password: [REDACTED:password]",
        ]
    finally:
        await uni.close()
