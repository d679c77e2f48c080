"""``--judge-model provider:model``: building the chat model (error paths only: no network here) and the wiring."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from benchmarks import run_bench
from benchmarks.harness import models
from benchmarks.harness import systems as registry
from benchmarks.harness.baselines import BM25Baseline
from benchmarks.harness.models import ModelSpecError, build_chat_model, parse_spec
from langchain_core.language_models.fake_chat_models import FakeListChatModel


def _bm25() -> BM25Baseline:
    return BM25Baseline()


@pytest.mark.parametrize("spec", ["gpt-4o-mini", "openai:", ":gpt-4o", "", "  :  "])
def test_malformed_specs(spec: str) -> None:
    with pytest.raises(ModelSpecError, match="PROVIDER:MODEL"):
        parse_spec(spec)


def test_spec_parsing() -> None:
    assert parse_spec(" OpenAI:gpt-4o-mini ") == ("openai", "gpt-4o-mini")
    assert parse_spec("ollama:llama3:8b") == ("ollama", "llama3:8b")


@pytest.mark.parametrize(
    ("spec", "package", "env"),
    [
        ("openai:gpt-4o-mini", "langchain-openai", "OPENAI_API_KEY"),
        ("anthropic:claude-3-5-haiku-latest", "langchain-anthropic", "ANTHROPIC_API_KEY"),
        ("cohere:command-r", "langchain-cohere", "COHERE_API_KEY"),
    ],
)
def test_missing_package_and_key_are_both_named(
    spec: str, package: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = models.PROVIDERS[spec.split(":")[0]].module
    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ModelSpecError) as err:
        build_chat_model(spec)
    msg = str(err.value)
    assert f"pip install {package}" in msg and env in msg and spec in msg
    monkeypatch.setenv(env, "sk-test")
    with pytest.raises(ModelSpecError) as err:
        build_chat_model(spec)
    assert package in str(err.value) and env not in str(err.value)


def test_missing_key_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("langchain_openai")
    fake.ChatOpenAI = lambda **kw: ("built", kw)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langchain_openai", fake)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY") as err:
        build_chat_model("openai:gpt-4o-mini")
    assert "pip install" not in str(err.value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert build_chat_model("openai:gpt-4o-mini") == ("built", {"model": "gpt-4o-mini", "temperature": 0})

    def broken(**kw: Any) -> Any:
        raise ValueError("bad option")

    fake.ChatOpenAI = broken  # type: ignore[attr-defined]
    with pytest.raises(ModelSpecError, match="could not be built: bad option"):
        build_chat_model("openai:gpt-4o-mini")


def test_other_providers_go_through_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelSpecError, match="nosuchprovider"):
        build_chat_model("nosuchprovider:model-x")
    calls: list[tuple[str, dict[str, Any]]] = []

    def init_chat_model(model: str, **kw: Any) -> Any:
        calls.append((model, kw))
        return FakeListChatModel(responses=["x"])

    import langchain.chat_models

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    assert isinstance(build_chat_model("ollama:llama3:8b"), FakeListChatModel)
    assert calls == [("llama3:8b", {"model_provider": "ollama", "temperature": 0})]
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(ModelSpecError, match="install the 'langchain' package"):
        build_chat_model("ollama:llama3")


def test_cli_fails_before_any_retrieval(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_system() -> Any:
        raise AssertionError("no system may be built when the judge model is unusable")

    monkeypatch.setitem(registry.SYSTEMS, "baseline-bm25", no_system)
    monkeypatch.setitem(sys.modules, "langchain_openai", None)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = str(data_dir / "locomo_tiny.json")
    argv = ["--data", data, "--systems", "baseline-bm25", "--no-progress"]
    assert run_bench.main([*argv, "--judge-model", "openai:gpt-4o-mini"]) == 2
    err = capsys.readouterr().err
    assert "langchain-openai" in err and "OPENAI_API_KEY" in err
    assert run_bench.main([*argv, "--judge-model", "gpt-4o-mini"]) == 2
    assert "PROVIDER:MODEL" in capsys.readouterr().err
    assert run_bench.main([*argv, "--answer-model", "openai:gpt-4o-mini"]) == 2
    assert "--answer-model needs --judge-model" in capsys.readouterr().err
    assert run_bench.main([*argv, "--judge-model", "x:y", "--judge-systems", "uniko"]) == 2
    assert "not run" in capsys.readouterr().err


def test_cli_wires_the_judge_with_a_fake_model(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(registry.SYSTEMS, "baseline-bm25", _bm25)
    built: dict[str, FakeListChatModel] = {}

    def fake_build(spec: str) -> FakeListChatModel:
        # answer, grade, answer, grade, ... (concurrency 1 keeps the order)
        reply = '{"reason": "same", "label": "CORRECT"}' if spec.startswith("judge") else "Rex"
        built[spec] = FakeListChatModel(responses=[reply])
        return built[spec]

    monkeypatch.setattr(run_bench, "build_chat_model", fake_build)
    out, judged = tmp_path / "r.json", tmp_path / "judged.jsonl"
    data = ["--data", str(data_dir / "locomo_tiny.json"), "--systems", "baseline-bm25", "--no-progress"]
    judge = ["--judge-model", "judge:fake", "--answer-model", "answer:fake", "--judge-concurrency", "1"]
    outputs = ["--out", str(out), "--judge-out", str(judged), "--token-budgets", "50,100"]
    rc = run_bench.main([*data, *judge, *outputs])
    assert rc == 0 and set(built) == {"judge:fake", "answer:fake"}
    llm = json.loads(out.read_text())["llm"]
    assert llm["answer_model"] == "answer:fake" and llm["judge_model"] == "judge:fake"
    assert llm["bundle_budget"] == 1000
    summary = llm["systems"]["baseline-bm25"]
    assert summary["n"] == 3 and summary["accuracy"] == 1.0 and summary["tokens_estimated"]
    rows = [json.loads(line) for line in judged.read_text().splitlines()]
    assert (
        len(rows) == 3
        and {r["answer"] for r in rows} == {"Rex"}
        and {r["label"] for r in rows} == {"CORRECT"}
    )
    text = capsys.readouterr().out
    assert "LLM stage: answers by `answer:fake`, graded by `judge:fake`" in text
    assert "| baseline-bm25 | 1.000 |" in text
