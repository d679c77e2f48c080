from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from uniko_memory.errors import ConfigError, ProviderError, ValidationError
from uniko_memory.providers.rerank.base import Reranker, RerankResult, rerank_with_fallback, sort_results

DOCS = ["short", "a somewhat longer passage", "the longest passage of all of these passages", "mid size"]


class Scripted:
    """A reranker returning a fixed answer or raising."""

    model_id = "scripted"

    def __init__(self, answer: object = None, error: Exception | None = None, delay: float = 0.0) -> None:
        self.answer, self.error, self.delay = answer, error, delay

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        await asyncio.sleep(self.delay)
        if self.error:
            raise self.error
        return self.answer  # type: ignore[return-value]


def test_sort_results_best_first_ties_keep_order() -> None:
    res = [RerankResult(0, 0.5), RerankResult(1, 0.9), RerankResult(2, 0.5)]
    assert [r.index for r in sort_results(res, None)] == [1, 0, 2]
    assert [r.index for r in sort_results(res, 2)] == [1, 0]


async def test_fallback_returns_results_or_none(caplog: pytest.LogCaptureFixture) -> None:
    good = [RerankResult(2, 0.9), RerankResult(0, 0.1), RerankResult(1, 0.0)]
    assert await rerank_with_fallback(Scripted(good), "q", DOCS[:3]) == good
    assert await rerank_with_fallback(Scripted(good), "q", DOCS[:3], top_n=1) == good[:1]
    assert await rerank_with_fallback(None, "q", DOCS) is None
    assert await rerank_with_fallback(Scripted(error=RuntimeError("x")), "q", []) == []
    with caplog.at_level(logging.WARNING):
        assert await rerank_with_fallback(Scripted(error=ProviderError("down")), "q", DOCS) is None
        assert await rerank_with_fallback(Scripted(error=KeyError("bug")), "q", DOCS) is None
        slow = Scripted(good, delay=1.0)
        assert await rerank_with_fallback(slow, "q", DOCS[:3], time_limit=0.01) is None
    assert caplog.text.count("keeping the fused order") == 3


@pytest.mark.parametrize(
    "answer",
    [
        [RerankResult(7, 0.9)],  # out of range
        [RerankResult(0, 0.9), RerankResult(0, 0.8)],  # duplicate
        [RerankResult(0, float("nan"))],
        "not a list",
    ],
)
async def test_fallback_rejects_corrupt_answers(answer: object) -> None:
    assert await rerank_with_fallback(Scripted(answer), "q", DOCS) is None


async def test_fallback_does_not_swallow_cancellation() -> None:
    task = asyncio.create_task(rerank_with_fallback(Scripted([], delay=10), "q", DOCS))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- local cross-encoder --------------------------------------------------------------------


def test_folder_validation(tmp_path: Path) -> None:
    from uniko_memory.providers.rerank.local import LocalCrossEncoderReranker

    with pytest.raises(ConfigError, match="not found"):
        LocalCrossEncoderReranker(tmp_path / "nope")
    with pytest.raises(ConfigError, match=r"model\.onnx, tokenizer\.json"):
        LocalCrossEncoderReranker(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"lacks tokenizer\.json"):
        LocalCrossEncoderReranker(tmp_path)


async def test_local_cross_encoder_ranks_by_model_score(tiny_cross_encoder_dir: Path) -> None:
    pytest.importorskip("onnxruntime")
    from uniko_memory.providers.rerank.local import LocalCrossEncoderReranker
    from uniko_memory.tokens import count_tokens

    rr = LocalCrossEncoderReranker(tiny_cross_encoder_dir, sigmoid=False, batch_size=3)
    assert isinstance(rr, Reranker)
    results = await rr.rerank("which passage?", DOCS)
    # The tiny model scores 0.1 × (passage tokens + its [SEP]): proves segment-B ids are fed.
    expected = sorted(range(len(DOCS)), key=lambda i: -count_tokens(DOCS[i]))
    assert [r.index for r in results] == expected
    for r in results:
        assert r.score == pytest.approx(0.1 * (count_tokens(DOCS[r.index]) + 1), rel=1e-5)
    top = await rr.rerank("which passage?", DOCS, top_n=2)
    assert [r.index for r in top] == expected[:2]
    assert await rr.rerank("q", []) == []
    with pytest.raises(ValidationError):
        await rr.rerank("q", "not a list")


async def test_local_cross_encoder_sigmoid_and_truncation(tiny_cross_encoder_dir: Path) -> None:
    pytest.importorskip("onnxruntime")
    from uniko_memory.providers.rerank.local import LocalCrossEncoderReranker

    rr = LocalCrossEncoderReranker(tiny_cross_encoder_dir, max_length=16)
    results = await rr.rerank("q", ["word " * 100, "two words"])
    assert all(0.0 < r.score < 1.0 for r in results)
    assert results[0].index == 0
    # 16 tokens: [CLS] q [SEP] + 13 passage tokens → 0.1 × 13 before the sigmoid.
    assert results[0].score == pytest.approx(1 / (1 + 2.718281828**-1.3), rel=1e-4)


async def test_local_cross_encoder_bad_model_is_provider_error(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from uniko_memory.providers._onnx import MINILM_TOKENIZER_PATH
    from uniko_memory.providers.rerank.local import LocalCrossEncoderReranker

    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    (tmp_path / "tokenizer.json").write_bytes(MINILM_TOKENIZER_PATH.read_bytes())
    rr = LocalCrossEncoderReranker(tmp_path)
    assert await rerank_with_fallback(rr, "q", DOCS) is None
