"""The secret scanner on its own: the corpus, markers, idempotence, user patterns, metadata, config."""

from __future__ import annotations

from typing import Any

import pytest

from uniko_memory.config import UnikoConfig
from uniko_memory.errors import ConfigError
from uniko_memory.security import SecretScanner, check_extra_patterns, redact_secrets

from .conftest import NEGATIVE, POSITIVE


def test_corpus_is_big_enough() -> None:
    assert len(POSITIVE) >= 30 and len(NEGATIVE) >= 30
    kinds = {k for case in POSITIVE for k in case["kinds"]}
    assert kinds >= {
        "aws_access_key",
        "aws_secret_key",
        "github_token",
        "openai_key",
        "anthropic_key",
        "slack_token",
        "stripe_key",
        "google_api_key",
        "jwt",
        "bearer_token",
        "generic_secret",
        "private_key",
        "password",
        "credit_card",
    }


@pytest.mark.parametrize("case", POSITIVE, ids=[f"pos{i}-{c['kinds'][0]}" for i, c in enumerate(POSITIVE)])
def test_positive_case_is_masked(case: dict[str, Any]) -> None:
    result = redact_secrets(case["text"])
    for secret in case["secrets"]:
        assert secret not in result.text
    assert set(result.counts) == set(case["kinds"])
    for kind in case["kinds"]:
        assert f"[REDACTED:{kind}]" in result.text
    # Findings carry kinds and offsets only: safe to log or repr.
    for secret in case["secrets"]:
        assert secret not in repr(result.findings)


@pytest.mark.parametrize("text", NEGATIVE, ids=[f"neg{i}" for i in range(len(NEGATIVE))])
def test_negative_case_is_unchanged(text: str) -> None:
    result = redact_secrets(text)
    assert result.text == text
    assert not result.changed and not result.findings


def test_marker_keeps_the_surrounding_text() -> None:
    assert redact_secrets("password: hunter2").text == "password: [REDACTED:password]"
    assert redact_secrets("DB_PASSWORD=hunter2 and more").text == "DB_PASSWORD=[REDACTED:password] and more"
    assert redact_secrets('{"password": "two words"}, ok').text == '{"password": "[REDACTED:password]"}, ok'
    text = "I paid with 4111 1111 1111 1111 and key AKIAIOSFODNN7EXAMPLE yesterday."
    result = redact_secrets(text)
    assert result.text == "I paid with [REDACTED:credit_card] and key [REDACTED:aws_access_key] yesterday."
    # Offsets point into the original text.
    assert [text[f.start : f.end] for f in result.findings] == ["4111 1111 1111 1111", "AKIAIOSFODNN7EXAMPLE"]


def test_whole_private_key_block_is_one_marker() -> None:
    case = next(c for c in POSITIVE if c["text"].startswith("Here is the deploy key"))
    assert (
        redact_secrets(case["text"]).text
        == "Here is the deploy key:\n[REDACTED:private_key]\nDon't share it."
    )


@pytest.mark.parametrize("case", POSITIVE[::5])
def test_redaction_is_idempotent(case: dict[str, Any]) -> None:
    once = redact_secrets(case["text"]).text
    again = redact_secrets(once)
    assert again.text == once and not again.findings


def test_uuid_and_commit_hash_stay_but_a_hash_assigned_to_a_token_is_masked() -> None:
    prose = "deployed 9fceb02d0ae598e95dc970b74767f19372d61af8 for 123e4567-e89b-12d3-a456-426614174000"
    assert redact_secrets(prose).text == prose
    assert redact_secrets("token=9fceb02d0ae598e95dc970b74767f19372d61af8").text == (
        "token=[REDACTED:generic_secret]"
    )


def test_extra_patterns_mask_the_whole_match_or_the_secret_group() -> None:
    scanner = SecretScanner((r"EMP-\d{6}", r"badge (?P<secret>[A-Z]{2}\d{4})"))
    result = scanner.redact("employee EMP-123456 has badge QX4471 today")
    assert result.text == "employee [REDACTED:custom] has badge [REDACTED:custom] today"
    assert result.counts == {"custom": 2}
    assert redact_secrets("EMP-123456", [r"EMP-\d{6}"]).text == "[REDACTED:custom]"
    assert redact_secrets("EMP-123456").text == "EMP-123456"  # built-ins alone leave it


@pytest.mark.parametrize("bad", ["(unclosed", "a{2,1}", "x*"])
def test_bad_extra_pattern_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"secret_patterns_extra\[0\]"):
        check_extra_patterns([bad])
    with pytest.raises(ConfigError, match="secret_patterns_extra"):
        UnikoConfig.build({"ingest": {"secret_patterns_extra": [bad]}})
    with pytest.raises(ConfigError):
        SecretScanner((bad,))


def test_config_defaults_and_switch() -> None:
    cfg = UnikoConfig()
    assert cfg.ingest.redact_secrets is True and cfg.ingest.secret_patterns_extra == []
    off = UnikoConfig.build({"ingest": {"redact_secrets": False, "secret_patterns_extra": [r"EMP-\d+"]}})
    assert off.ingest.redact_secrets is False and off.ingest.secret_patterns_extra == [r"EMP-\d+"]


def test_metadata_values_are_masked_by_content_and_by_key() -> None:
    scanner = SecretScanner()
    data = {
        "note": "key AKIAIOSFODNN7EXAMPLE",
        "db_password": "hunter2",
        "api_token": "Zx9kQ2mP7vR4tL8wN3bY6cH1jF5dG0sA",
        "token_count": 12,
        "nested": {"items": ["password: s3cret!", "plain"], "pair": ("a", "card 4111111111111111")},
        "title": "ordinary words",
        "password_hint": "the name of my first cat",
    }
    masked, counts = scanner.redact_data(data)
    assert masked == {
        "note": "key [REDACTED:aws_access_key]",
        "db_password": "[REDACTED:password]",
        "api_token": "[REDACTED:generic_secret]",
        "token_count": 12,
        "nested": {
            "items": ["password: [REDACTED:password]", "plain"],
            "pair": ("a", "card [REDACTED:credit_card]"),
        },
        "title": "ordinary words",
        "password_hint": "the name of my first cat",
    }
    assert counts == {"aws_access_key": 1, "password": 2, "generic_secret": 1, "credit_card": 1}
    assert data["db_password"] == "hunter2"  # the input is not modified


def test_large_and_adversarial_inputs_stay_fast() -> None:
    import time

    for text in (
        "1 2 3 " * 30_000,
        "411-" * 40_000,
        "password=" * 20_000,
        "a" * 200_000,
        "eyJ" + "A" * 199_000,
    ):
        t0 = time.perf_counter()
        redact_secrets(text)
        assert time.perf_counter() - t0 < 10.0  # linear: ~1 s at worst on a busy core


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("PIN: 4471", "PIN: [REDACTED:pin]"),
        ('{"pin": "90817263"}', '{"pin": "[REDACTED:pin]"}'),
        ("sim_pin=1234, then reboot", "sim_pin=[REDACTED:pin], then reboot"),
        ("PIN code: 482913", "PIN code: [REDACTED:pin]"),
        ("the passcode: 482913 opens it", "the passcode: [REDACTED:password] opens it"),
        ("ＰＩＮ：４４７１", "ＰＩＮ：[REDACTED:pin]"),  # full-width, read through the normalised view
    ],
)
def test_a_pin_is_masked_as_the_value_of_a_pin_key(text: str, masked: str) -> None:
    """Issue 40.12: a PIN is a short number, so only a PIN key in front of it says what it is."""
    assert redact_secrets(text).text == masked


@pytest.mark.parametrize(
    "text",
    [
        "pin the tab",
        "my PIN is hard to remember",
        "PIN: required",
        "PIN code: 123",  # too short for a PIN
        "spin: 1234",  # ``pin`` ending another word
        "the pin: 2023-05-08",  # a date, not a PIN
        "the key to success",
        "pw is short for password",
        "Passwort: ist zu kurz",
        "cache_key=v2/users/12345/profile",
        "idempotency_key=8f14e45fceea167a5a36dedd4bea2543",
        "public_key = AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey123",
        "Tel. 0049.30.123456789",
        "IP 192.168.100.200",
        "On 2023.05.08 at 12.30",
    ],
)
def test_prose_and_index_keys_near_the_new_rules_stay(text: str) -> None:
    assert redact_secrets(text).text == text


def test_new_secret_names_are_masked_in_metadata_too() -> None:
    masked, counts = SecretScanner().redact_data(
        {
            "SERVICE_KEY": "FakeSvc9kQ2mP7vR4tL8wN3bY6cH1jEXAMPLE",
            "sort_key": "createdAt2023DescOrder",
            "pin": "4471",
            "pin_hint": "1234 is my birthday",
            "passcode": "hunter2",
            "Passwort": "Geheim",
        }
    )
    assert masked == {
        "SERVICE_KEY": "[REDACTED:generic_secret]",
        "sort_key": "createdAt2023DescOrder",
        "pin": "[REDACTED:pin]",
        "pin_hint": "1234 is my birthday",
        "passcode": "[REDACTED:password]",
        "Passwort": "[REDACTED:password]",
    }
    assert counts == {"generic_secret": 1, "pin": 1, "password": 2}
