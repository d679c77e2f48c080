"""Any LangChain ``BaseChatModel`` as a :class:`ChatModel`, behind an optional circuit breaker.

Provider failures become ``ProviderError`` (and count against the breaker); bad input is a
``ValidationError`` raised before the breaker, so caller mistakes never trip it.
``structured`` prefers the model's native ``with_structured_output`` (tool calling / JSON
mode) and falls back to asking for JSON and parsing the text reply for models without it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from uniko_memory.errors import CircuitOpen, ConfigError, ProviderError
from uniko_memory.providers._onnx import require
from uniko_memory.providers.chat.base import ChatResult, Messages, normalize_messages
from uniko_memory.providers.chat.breaker import CircuitBreaker

__all__ = ["LangChainChat"]

log = logging.getLogger(__name__)
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_JSON_INSTRUCTION = (
    "Reply with a single JSON object and nothing else (no prose, no code fences). "
    "It must validate against this JSON Schema:\n{schema}"
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class LangChainChat:
    """``ChatModel`` over ``ainvoke``; ``timeout`` (seconds) bounds each call."""

    def __init__(
        self, model: Any, breaker: CircuitBreaker | None = None, *, timeout: float | None = None
    ) -> None:
        lcm = require("langchain_core.language_models", package="langchain-core", extra="langchain")
        if not isinstance(model, lcm.BaseChatModel):
            raise ConfigError(f"expected a langchain_core BaseChatModel, got {type(model).__name__}")
        self._model = model
        self.breaker = breaker
        self.timeout = timeout
        self.model_name: str = (
            getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
        )

    async def _guarded(self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        async def attempt() -> T:
            try:
                if self.timeout is None:
                    return await fn()
                return await asyncio.wait_for(fn(), self.timeout)
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(f"chat model {self.model_name} {what} failed: {exc!r}") from exc

        if self.breaker is None:
            return await attempt()
        try:
            return await self.breaker.call(attempt)
        except CircuitOpen:
            log.warning("chat model %s: circuit open, call refused", self.model_name)
            raise

    async def generate(self, messages: Messages) -> ChatResult:
        msgs = normalize_messages(messages)
        reply = await self._guarded("generate", lambda: self._model.ainvoke(msgs))
        return self._result(reply)

    def _result(self, reply: Any) -> ChatResult:
        text = getattr(reply, "text", None)
        if isinstance(text, str):  # 1.x: a str subclass that is also (deprecatedly) callable
            text = str(text)
        elif callable(text):  # langchain-core < 1.0 exposed text() as a method
            text = text()
        if not isinstance(text, str):
            text = str(getattr(reply, "content", "") or "")
        usage = getattr(reply, "usage_metadata", None) or {}
        meta = getattr(reply, "response_metadata", None) or {}
        model = meta.get("model_name") or meta.get("model") or self.model_name
        return ChatResult(
            text=text,
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            model=str(model) if model else None,
        )

    async def structured(self, schema: type[M], prompt: Messages) -> M:
        """A validated ``schema`` instance; ``ProviderError`` when the reply does not fit it."""
        msgs = normalize_messages(prompt)
        try:
            runnable = self._model.with_structured_output(schema)
        except NotImplementedError:
            runnable = None
        if runnable is not None:
            out = await self._guarded("structured", lambda: runnable.ainvoke(msgs))
            return _coerce(schema, out)
        instruction = _JSON_INSTRUCTION.format(schema=json.dumps(schema.model_json_schema()))
        result = await self.generate([("system", instruction), *msgs])
        return _coerce(schema, _extract_json(result.text))

    def __repr__(self) -> str:
        return f"LangChainChat(model={self.model_name!r}, breaker={self.breaker!r})"


def _extract_json(text: str) -> Any:
    """The JSON object in a reply, tolerating code fences and prose around it."""
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    start, end = candidate.find("{"), candidate.rfind("}")
    if start < 0 or end < start:
        raise ProviderError(f"chat model reply holds no JSON object: {text[:200]!r}")
    try:
        return json.loads(candidate[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ProviderError(f"chat model reply is not valid JSON: {exc}") from exc


def _coerce(schema: type[M], value: Any) -> M:
    if isinstance(value, schema):
        return value
    try:
        return schema.model_validate(value)
    except PydanticValidationError as exc:
        raise ProviderError(f"chat model reply does not match {schema.__name__}: {exc}") from exc
