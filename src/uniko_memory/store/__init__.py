"""Storage: the protocol and its base class, the filter language, the one fusion, and the backends."""

from .base import BaseStore
from .filters import And, Eq, Filter, In, IsNull, Not, Or, Range, all_of, visible_to
from .fusion import min_max, relative_score, rrf
from .protocol import Hit, Store, UnitOfWork

__all__ = [
    "And",
    "BaseStore",
    "Eq",
    "Filter",
    "Hit",
    "In",
    "IsNull",
    "Not",
    "Or",
    "Range",
    "Store",
    "UnitOfWork",
    "all_of",
    "min_max",
    "relative_score",
    "rrf",
    "visible_to",
]
