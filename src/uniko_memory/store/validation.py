"""Argument checks shared by every backend, so bad input fails the same way everywhere."""

from __future__ import annotations

from ..errors import ValidationError
from ..model import Tier, node_class
from ..model.text import without_surrogates

MAX_K = 10_000
#: The longest agent id a node can carry (``Node.agent``).
MAX_AGENT_CHARS = 256


def check_agent(agent: object) -> str:
    """Refuse an agent id no node could be stored under, at the first call that names it."""
    if not isinstance(agent, str) or not agent.strip():
        raise ValidationError("agent must be a non-empty string")
    if len(agent) > MAX_AGENT_CHARS:
        raise ValidationError(f"agent id has {len(agent):,} characters, over the limit of {MAX_AGENT_CHARS}")
    if without_surrogates(agent) != agent:
        raise ValidationError("agent id holds a lone surrogate (not encodable as UTF-8)")
    return agent


def check_tier(tier: object) -> Tier:
    return node_class(tier if isinstance(tier, (str, Tier)) else str(tier)).tier


def check_k(k: object, *, name: str = "k", maximum: int = MAX_K) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0 or k > maximum:
        raise ValidationError(f"{name} must be an integer in [1, {maximum}]")
    return k
