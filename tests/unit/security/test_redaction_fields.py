"""Every stored string is scanned: a turn's free-text fields are masked, ids holding a secret are
refused; the same for artifacts (path, ids) and recorded answer Episodes (outcome, action type)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ingest._support import messages, open_uni, turn
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Artifact, Participant, Session, Tier
from uniko_memory.query import GeneratedAnswer, QueryRecordOptions, answer_query
from uniko_memory.recall import ContextBundle

from .conftest import CapturingEmbedder, stored_text

AGENT = "fields"
OPENAI = "sk-proj-Ab3dEf9hIj2kLm4nOp6qRs8tUv0wXy"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "Tr0ub4dor&3xyz"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYXJvbGluZSJ9.c2lnbmF0dXJlRkFLRWV4YW1wbGU"
#: The key with a zero-width space in it: found in the normalised view.
OPENAI_ZW = OPENAI[:12] + "\u200b" + OPENAI[12:]
SECRETS = [OPENAI, AWS, PASSWORD, JWT, OPENAI[12:], "Tr0ub4dor"]


def assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked into {where}"


async def test_every_free_text_field_of_a_turn_is_masked() -> None:
    embedder = CapturingEmbedder()
    uni = await open_uni(embedder=embedder)
    try:
        s = uni.agent(AGENT).session("s1")
        result = await s.observe(
            turn(
                "ops",
                f"Deploy finished; the key was {OPENAI_ZW} and the AWS one {AWS.lower()}.",
                id="t1",
                sender_name=f"Ops {OPENAI}",
                category=f"deploy password：{PASSWORD}",
                content_type=f"text {AWS}",
                metadata={f"note {AWS}": "x", "nested": {"ｐａｓｓｗｏｒｄ": PASSWORD}},
            )
        )
        assert result.secrets_redacted == 7
        [m] = await messages(uni, AGENT)
        assert m.sender_name == "Ops [REDACTED:openai_key]"
        assert m.category == "deploy password：[REDACTED:password]"
        assert m.content_type == "text [REDACTED:aws_access_key]"
        assert m.content == (
            "Deploy finished; the key was [REDACTED:openai_key] and the AWS one [REDACTED:aws_access_key]."
        )
        assert m.metadata == {
            "note [REDACTED:aws_access_key]": "x",
            "nested": {"ｐａｓｓｗｏｒｄ": "[REDACTED:password]"},
        }
        [p] = [
            n
            for n in await uni.kb.store.find(AGENT, Tier.PARTICIPANT, limit=10)
            if isinstance(n, Participant)
        ]
        assert (p.external_id, p.name) == ("ops", "Ops [REDACTED:openai_key]")
        [sess] = [n for n in await uni.kb.store.find(AGENT, Tier.SESSION, limit=10) if isinstance(n, Session)]
        assert sess.participant_names == ["Ops [REDACTED:openai_key]"]
        await uni.agent(AGENT).flush(timeout=60)
        assert_clean(await stored_text(uni, AGENT), "the store")
        assert_clean("\n".join(embedder.seen), "the embedder's inputs")
        # A replay of the same raw turn masks the same way: a no-op.
        again = await s.observe(
            turn(
                "ops",
                f"Deploy finished; the key was {OPENAI_ZW} and the AWS one {AWS.lower()}.",
                id="t1",
                sender_name=f"Ops {OPENAI}",
            )
        )
        assert again.was_replay and again.message_node_id == result.message_node_id
    finally:
        await uni.close()


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("id", {"id": f"turn-{OPENAI}"}),
        ("id", {"id": f"turn-{OPENAI_ZW}"}),
        ("sender", {"sender": f"bot {AWS}"}),
        ("addressed_to[1]", {"addressed_to": ["melanie", f"password={PASSWORD}"]}),
        ("visibility", {"visibility": f"private:{JWT}"}),
    ],
)
async def test_a_turn_whose_id_holds_a_secret_is_refused(field: str, kwargs: dict[str, object]) -> None:
    uni = await open_uni()
    try:
        kwargs.setdefault("sender", "caroline")
        with pytest.raises(ValidationError, match=r"looks like a secret \(\w+\) in its ") as exc:
            await uni.agent(AGENT).session("s1").observe(turn(content="An ordinary line.", **kwargs))  # type: ignore[arg-type]
        message = str(exc.value)
        assert f"in its {field};" in message and "opaque id" in message
        assert_clean(message, "the error")
        assert await messages(uni, AGENT) == []
        assert_clean(await stored_text(uni, AGENT), "the store")
    finally:
        await uni.close()


async def test_a_session_id_holding_a_secret_is_refused() -> None:
    uni = await open_uni()
    try:
        for sid in (f"sess-{JWT}", f"web {OPENAI_ZW}"):
            with pytest.raises(ValidationError, match=r"in its session id") as exc:
                await uni.agent(AGENT).session(sid).observe(turn("caroline", "Hello there."))
            assert_clean(str(exc.value), "the error")
            unit = uni.agent(AGENT).session(sid).unit().turn("caroline", "One.").turn("melanie", "Two.")
            with pytest.raises(ValidationError, match=r"in its session id"):
                await unit.commit()
        assert_clean(await stored_text(uni, AGENT), "the store")
        assert await uni.kb.store.find(AGENT, Tier.SESSION, limit=10) == []
    finally:
        await uni.close()


async def test_numeric_ids_shaped_like_cards_are_ids() -> None:
    uni = await open_uni()
    try:
        s = uni.agent(AGENT).session("4111111111111111")
        r = await s.observe(turn("4012888888881881", "A numeric id is an id.", id="5555555555554444"))
        assert r.message_id == "5555555555554444" and r.secrets_redacted == 0
    finally:
        await uni.close()


async def test_ids_are_kept_verbatim_when_masking_is_off() -> None:
    uni = await open_uni({"ingest": {"redact_secrets": False}})
    try:
        r = (
            await uni.agent(AGENT)
            .session(f"sess-{JWT}")
            .observe(turn("caroline", "Verbatim.", id=f"turn-{OPENAI}", sender_name=f"Ops {OPENAI}"))
        )
        [m] = await messages(uni, AGENT)
        assert r.message_id == f"turn-{OPENAI}" and m.sender_name == f"Ops {OPENAI}"
    finally:
        await uni.close()


async def test_extra_patterns_mask_text_but_do_not_refuse_ids() -> None:
    """``secret_patterns_extra`` often name ids by design (employee numbers): text only."""
    uni = await open_uni({"ingest": {"secret_patterns_extra": [r"EMP-\d{6}"]}})
    try:
        s = uni.agent(AGENT).session("EMP-123456")
        r = await s.observe(
            turn("EMP-654321", "EMP-111111 called.", id="EMP-222222", sender_name="EMP-654321")
        )
        [m] = await messages(uni, AGENT)
        assert r.message_id == "EMP-222222" and r.secrets_redacted == 2
        assert (m.content, m.sender_name) == ("[REDACTED:custom] called.", "[REDACTED:custom]")
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- artifacts
async def test_artifact_ids_holding_a_secret_are_refused() -> None:
    uni = await open_uni()
    try:
        agent = uni.agent(AGENT)
        for options in (
            {"external_id": f"doc-{OPENAI}"},
            {"session": f"sess-{JWT}"},
            {"visibility": f"team:{AWS}"},
        ):
            with pytest.raises(ValidationError, match="the artifact has what looks like a secret") as exc:
                await agent.ingest_artifact(
                    b"Plain notes about the garden.", mime_type="text/plain", **options
                )
            assert_clean(str(exc.value), "the error")
        assert await uni.kb.store.find(AGENT, Tier.ARTIFACT, limit=10) == []
    finally:
        await uni.close()


async def test_artifact_path_and_title_are_masked_but_clean_bytes_kept(tmp_path: Path) -> None:
    path = tmp_path / f"notes-{AWS}.txt"
    path.write_text("Plain notes about the garden club and the pottery class.", encoding="utf-8")
    uni = await open_uni()
    try:
        report = await uni.agent(AGENT).ingest_artifact(path)
        art = await uni.kb.store.get(AGENT, report.artifact_node_id)
        assert isinstance(art, Artifact)
        assert art.source_path == str(tmp_path / "notes-[REDACTED:aws_access_key].txt")
        assert art.title == "notes-[REDACTED:aws_access_key]"
        assert report.secrets_redacted == 2
        assert report.bytes_stored  # the secret was in the path, not in the bytes
        assert_clean(await stored_text(uni, AGENT), "the store")
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- episodes
async def test_episode_outcome_and_action_type_are_masked() -> None:
    uni: Uniko = await open_uni()
    try:
        await uni.agent(AGENT).session("s1").observe(turn("caroline", "I adopted a cat called Oliver."))

        async def answer(bundle: ContextBundle, question: str) -> GeneratedAnswer:
            return GeneratedAnswer(text=f"the key is {OPENAI_ZW}", model="echo")

        opts = QueryRecordOptions(outcome=f"failed: password：{PASSWORD}", action_type=f"ask {AWS}")
        ans = await answer_query(
            uni.kb, "What is my cat called?", None, answer, opts, agent=AGENT, nlp=uni.nlp
        )
        ep = await uni.kb.store.get(AGENT, ans.recorded_episode or "")
        assert ep is not None
        assert_clean(ep.model_dump_json(), "the episode")
        assert getattr(ep, "outcome", None) == "failed: password：[REDACTED:password]"
        assert getattr(ep, "action_type", None) == "ask [REDACTED:aws_access_key]"
        assert ep.state["answer"] == "the key is [REDACTED:openai_key]"  # type: ignore[attr-defined]
        # The outcome reported later, once the answer is judged, is masked too.
        later = await uni.agent(AGENT).report_outcome(ep.id, f"wrong, the key is {AWS}")
        assert later.outcome == "wrong, the key is [REDACTED:aws_access_key]"
        assert_clean((await uni.kb.store.get(AGENT, ep.id)).model_dump_json(), "the episode")  # type: ignore[union-attr]
    finally:
        await uni.close()
