"""A small circuit breaker so a dead LLM endpoint fails fast instead of stalling every call.

closed → open after ``failure_threshold`` consecutive failures; once ``recovery_seconds``
have passed the breaker is half-open and lets exactly one probe through at a time (other
callers get :class:`CircuitOpen` at once); the probe's success closes it, its failure
re-opens it for another window.

State changes are short critical sections with no ``await`` inside, guarded by a
``threading.Lock``: that is async-safe (no task switch can happen mid-transition) and also
safe when one breaker is shared by several event loops or threads, which an
``asyncio.Lock`` (bound to one loop) is not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from uniko_memory.errors import CircuitOpen, ConfigError

__all__ = ["BreakerState", "CircuitBreaker"]

T = TypeVar("T")
BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Wrap calls with :meth:`call`; read :attr:`state` for health reporting."""

    def __init__(
        self,
        failure_threshold: int = 5,
        recovery_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or recovery_seconds < 0:
            raise ConfigError("failure_threshold must be >= 1 and recovery_seconds >= 0")
        self.failure_threshold = failure_threshold
        self.recovery_seconds = recovery_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None  # None while closed
        self._probe_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state_locked()

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    def _state_locked(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.recovery_seconds:
            return "half_open"
        return "open"

    def _acquire(self) -> bool:
        """Admit a call or raise ``CircuitOpen``; True when the call is the half-open probe."""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return False
            if state == "half_open" and not self._probe_in_flight:
                self._probe_in_flight = True
                return True
            assert self._opened_at is not None
            wait = max(0.0, self.recovery_seconds - (self._clock() - self._opened_at))
            reason = "a recovery probe is in flight" if state == "half_open" else f"retry in {wait:.1f}s"
        raise CircuitOpen(f"circuit open after {self._failures} consecutive failures; {reason}")

    def record_success(self, probe: bool = False) -> None:
        with self._lock:
            if probe or self._opened_at is None:
                self._failures = 0
                self._opened_at = None
            if probe:
                self._probe_in_flight = False

    def record_failure(self, probe: bool = False) -> None:
        with self._lock:
            self._failures += 1
            if probe:
                self._probe_in_flight = False
                self._opened_at = self._clock()
            elif self._opened_at is None and self._failures >= self.failure_threshold:
                self._opened_at = self._clock()

    def _release_probe(self) -> None:
        with self._lock:
            self._probe_in_flight = False

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` under the breaker; any ``Exception`` counts as a failure and re-raises."""
        probe = self._acquire()
        try:
            result = await fn()
        except Exception:
            self.record_failure(probe)
            raise
        except BaseException:  # cancelled: no verdict, let the next caller probe
            if probe:
                self._release_probe()
            raise
        self.record_success(probe)
        return result

    def reset(self) -> None:
        """Force the breaker closed (operator action, tests)."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probe_in_flight = False

    def __repr__(self) -> str:
        return f"CircuitBreaker(state={self.state!r}, failures={self._failures})"
