"""Argument checks shared by every backend, so bad input fails the same way everywhere."""

from __future__ import annotations

from ..errors import ValidationError
from ..model import Tier, node_class

MAX_K = 10_000


def check_agent(agent: object) -> str:
    if not isinstance(agent, str) or not agent.strip():
        raise ValidationError("agent must be a non-empty string")
    return agent


def check_tier(tier: object) -> Tier:
    return node_class(tier if isinstance(tier, (str, Tier)) else str(tier)).tier


def check_k(k: object, *, name: str = "k", maximum: int = MAX_K) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0 or k > maximum:
        raise ValidationError(f"{name} must be an integer in [1, {maximum}]")
    return k
