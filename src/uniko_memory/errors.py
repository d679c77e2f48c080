"""One exception hierarchy: callers catch ``UnikoError`` and branch on the subclass."""

from __future__ import annotations


class UnikoError(Exception):
    """Base of every error uniko-memory raises on purpose."""

    kind: str = "uniko"


class ConfigError(UnikoError, ValueError):
    """A configuration value is invalid or inconsistent."""

    kind = "config"


class ValidationError(UnikoError, ValueError):
    """Input data (a turn, a node, a query, a vector) is malformed."""

    kind = "validation"


class IdConflict(UnikoError):
    """The same id was written twice with different content."""

    kind = "id_conflict"


class Backpressure(UnikoError):
    """A bounded queue is full; retry later or submit with ``wait=True``."""

    kind = "backpressure"


class MissingDependency(UnikoError, ImportError):
    """An optional extra is not installed; the message names the extra to install."""

    kind = "missing_dependency"

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"the optional package {package!r} is needed{what}; install it with "
            f"`pip install 'uniko-memory[{extra}]'`"
        )
        self.package = package
        self.extra = extra


class StoreError(UnikoError):
    """The storage backend failed or refused an operation."""

    kind = "store"


class StoreLocked(StoreError):
    """Another process holds the embedded store open, or another connection its write lock."""

    kind = "store_locked"


class StorageFull(StoreError):
    """The disk (or quota) holding the store is full; the failed write was rolled back."""

    kind = "storage_full"


class StoreReadOnly(StoreError):
    """The store cannot be written (file or directory permissions, a read-only mount)."""

    kind = "store_read_only"


class SchemaMismatch(StoreError):
    """The store was created with a different schema version or embedding model."""

    kind = "schema_mismatch"


class UnknownTier(ValidationError):
    """A tier name that the data model does not define."""

    kind = "unknown_tier"


class FilterError(ValidationError):
    """A filter expression is malformed (unknown operator, bad field name, bad value)."""

    kind = "filter"


class NotFound(UnikoError, KeyError):
    """A node, session or participant that must exist does not."""

    kind = "not_found"

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class ProviderError(UnikoError):
    """An embedder, reranker or chat model failed."""

    kind = "provider"


class CircuitOpen(ProviderError):
    """The circuit breaker is open: calls are refused until the recovery window passes."""

    kind = "circuit_open"


class ClosedError(UnikoError):
    """The handle (store, knowledge base, facade) has been closed."""

    kind = "closed"
