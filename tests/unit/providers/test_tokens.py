from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uniko_memory import tokens

pytest.importorskip("tokenizers")


@pytest.fixture
def approx_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Pretend ``tokenizers`` is missing."""
    monkeypatch.setattr(tokens, "_tokenizer", None)
    monkeypatch.setattr(tokens, "_loaded", True)
    tokens._count_cached.cache_clear()
    tokens._count_long_cached.cache_clear()
    yield
    tokens._count_cached.cache_clear()
    tokens._count_long_cached.cache_clear()


def test_exact_counts() -> None:
    assert tokens.is_exact()
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens("Hello world!") == 3  # hello / world / ! — no [CLS]/[SEP]
    assert tokens.count_tokens("The unbelievably long word") == 8  # un ##bel ##ie ##va ##bly


def test_batch_matches_single_and_long_texts() -> None:
    texts = ["Hello world!", "", "Caroline's adoption-agency research", "x " * 3000]
    assert tokens.count_tokens_batch(texts) == [tokens.count_tokens(t) for t in texts]
    assert tokens.count_tokens("x " * 3000) == 3000  # no truncation at 128/256/512
    assert tokens.count_tokens_batch([]) == []


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        tokens.count_tokens(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tokens.count_tokens_batch(["a", 1])  # type: ignore[list-item]


def test_truncate_to_tokens() -> None:
    text = "The unbelievably antidisestablishmentarianism"
    assert tokens.truncate_to_tokens(text, 100) == text
    assert tokens.truncate_to_tokens(text, 0) == ""
    assert tokens.truncate_to_tokens(text, 3) == "The"  # does not leave half of "unbelievably"
    assert tokens.truncate_to_tokens(text, 6) == "The unbelievably"
    assert tokens.truncate_to_tokens("unbelievably", 2) == "unbel"  # a lone long word is split
    sentence = "I love playing basketball with Melanie, every Sunday."
    for n in range(1, 14):
        cut = tokens.truncate_to_tokens(sentence, n)
        assert sentence.startswith(cut)
        assert tokens.count_tokens(cut) <= n
    with pytest.raises(ValueError):
        tokens.truncate_to_tokens(text, -1)


def test_thread_safe_counting() -> None:
    results: list[int] = []

    def work() -> None:
        results.extend(tokens.count_tokens(f"thread message number {i}") for i in range(200))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 800 and all(r == 4 for r in results)


def test_approximation_never_undercounts_much(approx_mode: None) -> None:
    assert not tokens.is_exact()
    assert tokens.count_tokens("Hello world!") == 4  # ceil(3 × 1.3)
    texts = ["I love playing basketball with Melanie, every Sunday.", "What did Caroline research?"]
    assert tokens.count_tokens_batch(texts) == [tokens.count_tokens(t) for t in texts]
    cut = tokens.truncate_to_tokens("one two three four five six", 4)
    assert cut == "one two three" and tokens.count_tokens(cut) <= 4


_TRICKY = [
    "",
    "   ",
    "a😀b c",
    "naïve café – ß straße",
    "don't stop_me-now!!! (really)",
    "日本語のテキスト and English",
    "x\x1cy z\u2028w",
    "[7 May 2023] Caroline: I went to a LGBTQ support group yesterday (7 May 2023).",
    "€5 for 2,000.50 units; e-mail a@b.co",
    "supercalifragilisticexpialidocious" * 5,
]


@given(st.text(min_size=0, max_size=200))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_min_tokens_is_a_lower_bound(text: str) -> None:
    assert tokens.min_tokens(text) <= tokens.count_tokens(text)


@pytest.mark.parametrize("text", _TRICKY)
def test_min_tokens_lower_bound_on_tricky_text(text: str) -> None:
    assert 0 <= tokens.min_tokens(text) <= tokens.count_tokens(text)


def test_min_tokens_lower_bound_in_approximation_mode(approx_mode: None) -> None:
    for text in _TRICKY:
        assert tokens.min_tokens(text) <= tokens.count_tokens(text)
