"""The token counter seam: a bundle's ``token_budget`` is counted in the tokens of the caller's model.

``token_budget=N`` promises that the text ``ContextBundle.render()`` returns holds at most ``N``
tokens *as this counter counts them*. The offline default is all-MiniLM-L6-v2 WordPiece (the
vendored tokenizer, ``uniko_memory.tokens``); ``TiktokenCounter("o200k_base")`` counts GPT-4o
tokens (``cl100k_base``: GPT-4 / GPT-3.5) and any ``str -> int`` callable can be injected, e.g. a
Claude or Llama tokenizer's length function. The counter's ``name`` is part of the recall cache key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from uniko_memory.errors import ConfigError, MissingDependency

__all__ = [
    "CallableTokenCounter",
    "MiniLMTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "as_token_counter",
    "default_token_counter",
    "is_additive_over_lines",
    "word_lower_bound",
]

#: Short texts recur across recalls (items, headings): their counts are memoised per counter.
_MEMO_CHARS = 512
_MEMO_SIZE = 16384


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of prompt text, without special tokens."""

    #: Stable id of the tokenizer (in the recall cache key): "minilm", "tiktoken:o200k_base", ...
    name: str

    def count(self, text: str) -> int: ...


def is_additive_over_lines(counter: TokenCounter) -> bool:
    """Whether ``count("\n".join(lines)) == sum(count(line) for line in lines)`` always holds:
    WordPiece never joins text across whitespace and a line break is no token of its own. Packing
    then trusts its running sum; for other counters it counts the rendered text whole."""
    if not isinstance(counter, MiniLMTokenCounter):
        return False
    from uniko_memory.tokens import is_exact

    return is_exact()  # the approximation used without ``tokenizers`` rounds up per text


class MiniLMTokenCounter:
    """all-MiniLM-L6-v2 WordPiece (the offline default; see ``uniko_memory.tokens``)."""

    name = "minilm"

    def count(self, text: str) -> int:
        from uniko_memory.tokens import count_tokens

        return count_tokens(text)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        from uniko_memory.tokens import count_tokens_batch

        return count_tokens_batch(texts)


class _Memoised:
    """Counts of short texts memoised (a bundle re-counts the same items and headings)."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self._fn = fn
        self._memo = lru_cache(maxsize=_MEMO_SIZE)(fn)

    def count(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"count expects str, got {type(text).__name__}")
        if not text:
            return 0
        n = self._memo(text) if len(text) <= _MEMO_CHARS else self._fn(text)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ConfigError(f"the token counter {self.name!r} returned {n!r}; expected an int >= 0")
        return n

    name: str


class TiktokenCounter(_Memoised):
    """GPT token counts for an OpenAI encoding (``o200k_base``: GPT-4o, ``cl100k_base``: GPT-4).

    ``encoding`` is a name or an object with ``encode(str)`` (a ``tiktoken.Encoding``). Names load
    from ``bpe-openai``, which ships the encodings (no download); without it, from ``tiktoken``
    (which downloads an encoding once unless it is in ``TIKTOKEN_CACHE_DIR``). Extra: ``tiktoken``.
    """

    def __init__(self, encoding: str | Any = "o200k_base") -> None:
        enc = _load_encoding(encoding) if isinstance(encoding, str) else encoding
        if not callable(getattr(enc, "encode", None)):
            raise ConfigError("TiktokenCounter needs an encoding name or an object with encode(str)")
        label = encoding if isinstance(encoding, str) else getattr(enc, "name", type(enc).__name__)
        self.name = f"tiktoken:{label}"
        super().__init__(lambda text: len(enc.encode(text, disallowed_special=())))


def _load_encoding(name: str) -> Any:
    try:
        import bpe_openai

        return bpe_openai.get_encoding(name)
    except ImportError:
        pass
    except Exception as exc:  # unknown name
        raise ConfigError(f"unknown OpenAI encoding {name!r}: {exc}") from None
    try:
        import tiktoken
    except ImportError:
        raise MissingDependency("bpe-openai", "tiktoken", "counting GPT tokens") from None
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        raise ConfigError(f"unknown OpenAI encoding {name!r}: {exc}") from None
    except Exception as exc:  # the download failed (offline) or the cache is unreadable
        raise ConfigError(
            f"tiktoken could not load {name!r} ({type(exc).__name__}: {exc}); install 'bpe-openai' "
            "(the 'tiktoken' extra), which ships the encodings, or set TIKTOKEN_CACHE_DIR"
        ) from None


class CallableTokenCounter(_Memoised):
    """Any ``str -> int`` function as a counter (e.g. ``lambda s: len(my_tokenizer.encode(s))``)."""

    def __init__(self, fn: Callable[[str], int], name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError("CallableTokenCounter needs a callable str -> int")
        self.name = name or f"callable:{getattr(fn, '__qualname__', type(fn).__name__)}"
        super().__init__(fn)


_DEFAULT = MiniLMTokenCounter()


def default_token_counter() -> TokenCounter:
    return _DEFAULT


def word_lower_bound(counter: TokenCounter) -> Callable[[str], int] | None:
    """A cheap lower bound of ``counter.count`` (one token per space-separated piece holding a word
    character), for skipping what cannot fit before counting it; None for a counter it does not bind
    (an arbitrary callable may count fewer tokens than words)."""
    if isinstance(counter, MiniLMTokenCounter | TiktokenCounter):
        from uniko_memory.tokens import min_tokens

        return min_tokens
    return None


def as_token_counter(value: TokenCounter | Callable[[str], int] | str | None) -> TokenCounter:
    """``None``: MiniLM; a ``TokenCounter``; an OpenAI encoding name; or a ``str -> int`` callable."""
    if value is None or value == "minilm":
        return _DEFAULT
    if isinstance(value, str):
        return TiktokenCounter(value.removeprefix("tiktoken:"))
    if isinstance(value, TokenCounter):
        if not isinstance(value.name, str) or not value.name:
            raise ConfigError("a TokenCounter needs a non-empty name (it is in the recall cache key)")
        return value
    if callable(value):
        return CallableTokenCounter(value)
    raise ConfigError(
        f"token_counter must be a TokenCounter, a str -> int callable or an encoding name, got {type(value).__name__}"
    )
