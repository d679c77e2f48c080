"""Secrets hidden by Unicode: zero-width and other invisible characters, full-width and other NFKC
forms, a lowercased key id. The scanner reads a normalised view and masks the original span."""

from __future__ import annotations

import time
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uniko_memory.security import SecretScanner, redact_secrets
from uniko_memory.security.normalise import _IGNORABLE_EXTRA, _TABLE_END, is_ignorable, normalised_view

from .conftest import POSITIVE

OPENAI = "sk-proj-Ab3dEf9hIj2kLm4nOp6qRs8tUv0wXy"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
GENERIC = "Zx9kQ2mP7vR4tL8wN3bY6cH1jF5dG0sA"
#: A sample of the invisible characters the view drops.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\ufe0f", "\U000e0041"]


def wide(text: str) -> str:
    """The full-width form of printable ASCII (``A`` → ``Ａ``, space → U+3000)."""
    return "".join("\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def split(secret: str, sep: str, at: int = 10) -> str:
    return secret[:at] + sep + secret[at:]


CASES = [
    # (text, expected masked text)
    (f"my key is {split(OPENAI, chr(0x200B))} ok", "my key is [REDACTED:openai_key] ok"),
    (f"key {split(AWS, chr(0xAD), 8)}!", "key [REDACTED:aws_access_key]!"),
    (f"token {split(GITHUB, chr(0x2060), 6)}", "token [REDACTED:github_token]"),
    (f"stripe {split(STRIPE, chr(0xFEFF) + chr(0x200C), 12)}.", "stripe [REDACTED:stripe_key]."),
    (f"tag {split(AWS, chr(0xE0041), 5)} end", "tag [REDACTED:aws_access_key] end"),
    (f"vs {split(OPENAI, chr(0xFE0F), 3)} end", "vs [REDACTED:openai_key] end"),
    (f"my {wide(AWS)} key", "my [REDACTED:aws_access_key] key"),
    (f"key={AWS.lower()}", "key=[REDACTED:aws_access_key]"),
    ("password：hunter2 and more", "password：[REDACTED:password] and more"),
    ("password\uff1a hunter2", "password\uff1a [REDACTED:password]"),
    (f"{wide('password=Tr0ub4dor')} ok", f"{wide('password=')}[REDACTED:password] ok"),
    (f"api_key=\u00a0{GENERIC}", "api_key=\u00a0[REDACTED:generic_secret]"),
    (f"token\u3000=\u3000{GENERIC}", "token\u3000=\u3000[REDACTED:generic_secret]"),
    (f"card {wide('4111 1111 1111 1111')} paid", "card [REDACTED:credit_card] paid"),
    ("pass\u200bword: hunter2", "pass\u200bword: [REDACTED:password]"),
    # Masking covers exactly the secret's original characters, ligatures and invisibles included.
    (
        "keep ﬁ and password：pa\u200bss\u00adw0rd! then ﬁn",
        "keep ﬁ and password：[REDACTED:password] then ﬁn",
    ),
    ("password: ﬁsh42ﬂ ok", "password: [REDACTED:password] ok"),
    # What the text as given shows is found even where the view reads differently: "™" is "TM" in
    # the view, which glues it to the key; the zero-width space separates two words.
    (f"™{AWS}", "™[REDACTED:aws_access_key]"),
    (f"คีย์\u200b{AWS}", "คีย์\u200b[REDACTED:aws_access_key]"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_hidden_secret_is_masked_over_its_original_span(text: str, expected: str) -> None:
    result = redact_secrets(text)
    assert result.text == expected
    again = redact_secrets(result.text)  # idempotent
    assert again.text == expected and not again.findings


def test_findings_point_into_the_original_text() -> None:
    text = f"a ﬁ b {split(OPENAI, chr(0x200B))} c"
    [finding] = redact_secrets(text).findings
    assert text[finding.start : finding.end] == split(OPENAI, chr(0x200B))
    wide_text = f"ﬁﬁ {wide(AWS)}"
    [finding] = redact_secrets(wide_text).findings
    assert wide_text[finding.start : finding.end] == wide(AWS)


PROSE = [
    "Le café « Chez Zoé » ouvre à 8\u202fh\u202f30\u00a0; réservez\u00a0!",
    "Family: 👨\u200d👩\u200d👧\u200d👦 and ❤\ufe0f and 👍🏽",
    "東京で会議（午後３時）がありました！パスワードは秘密です。",
    "The ﬁnal ofﬁce report is ready; see ① and ② below.",
    "Ｐａｓｓｗｏｒｄ： must be 12 characters",
    "ｔｏｋｅｎ\u3000of appreciation",
    "Soft\u00adware engi\u00adneer at the ﬁrm since 2019",
    "مرحبا\u200fبالعالم\u200e and שלום",
    "We flew to asia in 2024; #asiapacificforum2025 was great",
    "The akiaiosfodnnexample (no digit) and AKIA words",
    "x\u00b2 + y\u00b2 = z\u00b2, H\u2082O, 1\u20444 cup, ½ teaspoon",
    "Hangul ㄱㄴㄷ and half-width ｶﾀｶﾅ text",
]


@pytest.mark.parametrize("text", PROSE, ids=[f"prose{i}" for i in range(len(PROSE))])
def test_ordinary_unicode_prose_is_unchanged(text: str) -> None:
    result = redact_secrets(text)
    assert result.text == text and not result.findings


def test_stored_text_is_not_normalised_outside_a_secret() -> None:
    text = f"ﬁne ＡＢＣ\u200b café {AWS} ①"
    assert redact_secrets(text).text == "ﬁne ＡＢＣ\u200b café [REDACTED:aws_access_key] ①"


def test_metadata_keys_are_read_normalised_and_masked() -> None:
    scanner = SecretScanner()
    data: dict[str, Any] = {
        "ｐａｓｓｗｏｒｄ": "hunter2",
        "api\u200b_token": GENERIC,
        f"key {AWS}": 1,
        f"key {AWS[:-1]}F": 2,
        "key [REDACTED:aws_access_key]": 3,  # already masked, as a later key
        "plain": "ok",
    }
    masked, counts = scanner.redact_data(data)
    assert masked == {
        "ｐａｓｓｗｏｒｄ": "[REDACTED:password]",
        "api\u200b_token": "[REDACTED:generic_secret]",
        "key [REDACTED:aws_access_key]": 1,
        "key [REDACTED:aws_access_key] (2)": 2,  # two keys that mask alike stay two keys
        "key [REDACTED:aws_access_key] (3)": 3,
        "plain": "ok",
    }
    assert counts == {"password": 1, "generic_secret": 1, "aws_access_key": 2}


def test_the_view_tables_cover_every_code_point() -> None:
    """Above ``_TABLE_END`` nothing changes under NFKC, and the only format characters are the tags."""
    for cp in range(_TABLE_END, 0x110000):
        ch = chr(cp)
        assert unicodedata.normalize("NFKC", ch) == ch, hex(cp)
        if unicodedata.category(ch) == "Cf":
            assert any(a <= cp <= b for a, b in _IGNORABLE_EXTRA), hex(cp)
            assert is_ignorable(ch)
    for cp in range(0, _TABLE_END):
        ch = chr(cp)
        if unicodedata.category(ch) == "Cf":
            assert is_ignorable(ch), hex(cp)


def test_view_maps_every_character_back() -> None:
    text = "a\u200bﬁ\u00adＢ\u200c\u200dc ⅷ d\U000e0041e"
    view = normalised_view(text)
    assert view.changed and view.text == "afiBc viii de"
    # The original index of each view character: "ﬁ" and "ⅷ" expand, invisibles are dropped.
    origins = [0, 2, 2, 4, 7, 8, 9, 9, 9, 9, 10, 11, 13]
    assert [view.span(i, i + 1) for i in range(len(view.text))] == [(o, o + 1) for o in origins]
    assert view.span(0, len(view.text)) == (0, len(text))
    assert view.span(3, 5) == (4, 8)  # "Bc": the joiners between them are inside the span
    assert view.span(2, 3) == (2, 3)  # the "i" of "fi" is the ligature
    assert normalised_view("plain ascii").text == "plain ascii" and not normalised_view("café").changed


_hidden = st.sampled_from([*INVISIBLE, "wide"])


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(POSITIVE), data=st.data())
def test_corpus_secrets_hidden_by_unicode_are_still_masked(case: dict[str, Any], data: Any) -> None:
    """Each corpus secret, with invisible characters put into it and some of it made full-width."""
    text = case["text"]
    for secret in case["secrets"]:
        chars = list(secret)
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(chars) - 1))
            how = data.draw(_hidden)
            chars[i] = wide(chars[i]) if how == "wide" else chars[i] + how
        text = text.replace(secret, "".join(chars))
    result = redact_secrets(text)
    seen = normalised_view(result.text).text
    for secret in case["secrets"]:
        assert secret not in seen
    for kind in case["kinds"]:
        assert f"[REDACTED:{kind}]" in result.text


#: What "fast" means for a 1M-character text on a busy 2-core box (measured: 0.4 s for ASCII prose,
#: 0.9-1.4 s for text that needs the normalised view, which is scanned as well).
SCAN_BUDGET_S = 5.0


@pytest.mark.parametrize(
    "unit",
    [
        "the quick brown fox met Caroline in Lisbon on 8 May 2023 ",
        "東京で会議（午後３時）がありました！ ",
        "sk\u200b-a\u00adb ＡＢＣ１２３ ﬁ ",
        "password：\u200b" * 3 + " token\u3000=\u3000x ",
    ],
    ids=["ascii", "japanese", "invisible-and-wide", "adversarial"],
)
def test_a_million_characters_scan_in_linear_time(unit: str) -> None:
    text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    t0 = time.perf_counter()
    redact_secrets(text)
    assert time.perf_counter() - t0 < SCAN_BUDGET_S
