from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from uniko_memory.errors import CircuitOpen, ConfigError, ProviderError, ValidationError
from uniko_memory.providers.chat.base import ChatModel
from uniko_memory.providers.chat.breaker import CircuitBreaker

pytest.importorskip("langchain_core")

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from uniko_memory.providers.chat.langchain import LangChainChat


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Person(BaseModel):
    name: str
    age: int


class Flaky(BaseChatModel):
    """Fails while ``fail`` is true; otherwise answers "ok"."""

    fail: bool = True
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "flaky"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        if self.fail:
            raise RuntimeError("endpoint down")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])


class Structured(GenericFakeChatModel):
    def with_structured_output(self, schema: Any, **kw: Any) -> Any:
        return RunnableLambda(lambda _msgs: {"name": "Caroline", "age": 30})


# -- circuit breaker ------------------------------------------------------------------------------


async def boom() -> None:
    raise RuntimeError("fail")


async def ok() -> str:
    return "ok"


async def test_breaker_opens_after_threshold_and_refuses() -> None:
    clock = FakeClock()
    br = CircuitBreaker(failure_threshold=5, recovery_seconds=60.0, clock=clock)
    for _ in range(4):
        with pytest.raises(RuntimeError):
            await br.call(boom)
    assert br.state == "closed"
    with pytest.raises(RuntimeError):
        await br.call(boom)
    assert br.state == "open"
    called = False

    async def spy() -> None:
        nonlocal called
        called = True

    with pytest.raises(CircuitOpen, match=r"retry in 60\.0s"):
        await br.call(spy)
    assert not called
    clock.now += 59.9
    assert br.state == "open"
    clock.now += 0.1
    assert br.state == "half_open"


async def test_success_resets_consecutive_count() -> None:
    br = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await br.call(boom)
    assert await br.call(ok) == "ok"
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await br.call(boom)
    assert br.state == "closed" and br.consecutive_failures == 2


async def test_half_open_admits_exactly_one_probe() -> None:
    clock = FakeClock()
    br = CircuitBreaker(failure_threshold=1, recovery_seconds=60.0, clock=clock)
    with pytest.raises(RuntimeError):
        await br.call(boom)
    clock.now += 60
    gate = asyncio.Event()

    async def slow_probe() -> str:
        await gate.wait()
        return "probe"

    probe = asyncio.create_task(br.call(slow_probe))
    await asyncio.sleep(0)
    with pytest.raises(CircuitOpen, match="probe is in flight"):
        await br.call(ok)
    gate.set()
    assert await probe == "probe"
    assert br.state == "closed"
    assert await br.call(ok) == "ok"


async def test_failed_probe_reopens_for_another_window() -> None:
    clock = FakeClock()
    br = CircuitBreaker(failure_threshold=2, recovery_seconds=60.0, clock=clock)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await br.call(boom)
    clock.now += 61
    with pytest.raises(RuntimeError):
        await br.call(boom)  # the probe
    assert br.state == "open"
    clock.now += 30
    with pytest.raises(CircuitOpen):
        await br.call(ok)
    clock.now += 30
    assert br.state == "half_open"
    assert await br.call(ok) == "ok"
    assert br.state == "closed"


async def test_cancelled_probe_frees_the_slot() -> None:
    clock = FakeClock()
    br = CircuitBreaker(failure_threshold=1, recovery_seconds=1.0, clock=clock)
    with pytest.raises(RuntimeError):
        await br.call(boom)
    clock.now += 1

    async def hang() -> None:
        await asyncio.sleep(10)

    task = asyncio.create_task(br.call(hang))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert br.state == "half_open"
    assert await br.call(ok) == "ok"


def test_breaker_config_and_reset() -> None:
    with pytest.raises(ConfigError):
        CircuitBreaker(failure_threshold=0)
    br = CircuitBreaker(failure_threshold=1, clock=FakeClock())
    br.record_failure()
    assert br.state == "open"
    br.reset()
    assert br.state == "closed"


# -- LangChainChat ----------------------------------------------------------------------------


async def test_generate_text_usage_and_model() -> None:
    reply = AIMessage(
        content="Hello Caroline",
        usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
        response_metadata={"model_name": "fake-1"},
    )
    chat = LangChainChat(GenericFakeChatModel(messages=iter([reply])))
    assert isinstance(chat, ChatModel)
    result = await chat.generate([("system", "be brief"), ("user", "hi")])
    assert result.text == "Hello Caroline"
    assert (result.input_tokens, result.output_tokens, result.model) == (12, 3, "fake-1")


async def test_generate_without_usage() -> None:
    chat = LangChainChat(FakeListChatModel(responses=["plain"]))
    result = await chat.generate("hello")
    assert result.text == "plain" and result.input_tokens is None and result.output_tokens is None
    assert result.model == "FakeListChatModel"


async def test_input_validation_does_not_touch_breaker() -> None:
    br = CircuitBreaker(failure_threshold=1, clock=FakeClock())
    chat = LangChainChat(FakeListChatModel(responses=["x"]), br)
    with pytest.raises(ValidationError):
        await chat.generate([("wizard", "hi")])
    with pytest.raises(ValidationError):
        await chat.generate("   ")
    with pytest.raises(ValidationError):
        await chat.generate([])
    assert br.state == "closed"
    with pytest.raises(ConfigError):
        LangChainChat(object())


async def test_provider_failures_trip_the_breaker() -> None:
    clock = FakeClock()
    model = Flaky()
    chat = LangChainChat(model, CircuitBreaker(failure_threshold=2, recovery_seconds=5.0, clock=clock))
    for _ in range(2):
        with pytest.raises(ProviderError, match="endpoint down"):
            await chat.generate("hi")
    with pytest.raises(CircuitOpen):
        await chat.generate("hi")
    assert model.calls == 2  # the refused call never reached the model
    model.fail = False
    clock.now += 5
    assert (await chat.generate("hi")).text == "ok"
    assert chat.breaker is not None and chat.breaker.state == "closed"


async def test_timeout_is_provider_error() -> None:
    class Slow(FakeListChatModel):
        async def _agenerate(self, *a: Any, **kw: Any) -> ChatResult:
            await asyncio.sleep(5)
            raise AssertionError("unreachable")

    chat = LangChainChat(Slow(responses=["x"]), timeout=0.01)
    with pytest.raises(ProviderError, match="TimeoutError"):
        await chat.generate("hi")


async def test_structured_native() -> None:
    chat = LangChainChat(Structured(messages=iter([])))
    person = await chat.structured(Person, "who?")
    assert person == Person(name="Caroline", age=30)


async def test_structured_json_fallback() -> None:
    chat = LangChainChat(
        FakeListChatModel(responses=['Sure!\n```json\n{"name": "Melanie", "age": 41}\n```', "no json here"])
    )
    assert await chat.structured(Person, [("human", "who?")]) == Person(name="Melanie", age=41)
    with pytest.raises(ProviderError, match="no JSON"):
        await chat.structured(Person, "who?")


async def test_structured_schema_mismatch() -> None:
    chat = LangChainChat(FakeListChatModel(responses=['{"name": "Melanie"}']))
    with pytest.raises(ProviderError, match="does not match Person"):
        await chat.structured(Person, "who?")
