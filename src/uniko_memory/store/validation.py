"""Argument checks shared by every backend, so bad input fails the same way everywhere.

``BaseStore`` runs them once per public call, before a backend hook sees the arguments.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import cast

import numpy as np

from ..errors import ValidationError
from ..model import Direction, EdgeType, Tier, node_class
from ..model.text import without_surrogates
from .filters import Eq
from .vector_math import as_unit_vector

MAX_K = 10_000
#: The largest ``limit`` of one ``find``.
MAX_FIND_LIMIT = 1_000_000
#: The longest agent id a node can carry (``Node.agent``).
MAX_AGENT_CHARS = 256
#: ``find`` orders by these without naming a node attribute.
BUILTIN_ORDERS = ("time", "id")


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


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError("search text must be a string")
    return text


def check_alpha(alpha: object) -> float:
    """A real number in [0, 1] (NaN is not); returned as given, never converted."""
    if not isinstance(alpha, numbers.Real) or not 0.0 <= float(alpha) <= 1.0:
        raise ValidationError("alpha must be within [0, 1]")
    return cast(float, alpha)


def check_query_vector(vector: object, dim: int | None) -> np.ndarray:
    """The query as a unit vector of the store's dimension (``dim`` None: any length)."""
    try:
        return as_unit_vector(vector, dim)
    except ValueError as exc:
        raise ValidationError(f"query vector: {exc}") from None


def check_order_by(order_by: str) -> str:
    """``time``, ``id`` or a valid attribute name (``FilterError``, a ``ValidationError``, if not)."""
    if order_by not in BUILTIN_ORDERS:
        Eq(order_by, None)  # validates the field name
    return order_by


def check_edge_query(
    edge_types: Sequence[EdgeType] | None, direction: Direction
) -> tuple[list[str] | None, Direction]:
    """The edge types as stored values (None: every type) and the direction, both validated."""
    direction = Direction(direction)
    return ([EdgeType(t).value for t in edge_types] if edge_types else None), direction
