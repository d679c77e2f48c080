"""The chat-model seam used by LLM-assisted features (summaries, extraction, answers in evals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from uniko_memory.errors import ValidationError

__all__ = ["ChatModel", "ChatResult", "Messages", "normalize_messages"]

M = TypeVar("M", bound=BaseModel)

#: A plain prompt, or ``(role, content)`` pairs with role in system/human/user/ai/assistant.
Messages = str | list[tuple[str, str]]

_ROLES = {"system": "system", "human": "human", "user": "human", "ai": "ai", "assistant": "ai"}


@dataclass(frozen=True, slots=True)
class ChatResult:
    """A reply; token counts are ``None`` when the provider did not report usage."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    model: str | None


@runtime_checkable
class ChatModel(Protocol):
    async def generate(self, messages: Messages) -> ChatResult: ...

    async def structured(self, schema: type[M], prompt: Messages) -> M: ...


def normalize_messages(messages: Messages) -> list[tuple[str, str]]:
    """Validate and canonicalise roles (``user`` → ``human``, ``assistant`` → ``ai``)."""
    if isinstance(messages, str):
        if not messages.strip():
            raise ValidationError("prompt is empty")
        return [("human", messages)]
    if not isinstance(messages, list) or not messages:
        raise ValidationError("messages must be a non-empty str or list of (role, content) pairs")
    out = []
    for i, item in enumerate(messages):
        if not (isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            raise ValidationError(f"messages[{i}] must be a (role, content) pair of str")
        role = _ROLES.get(item[0].lower())
        if role is None:
            raise ValidationError(f"messages[{i}] has unknown role {item[0]!r}")
        out.append((role, item[1]))
    return out
