"""One retry policy for every remote provider (embedders, rerankers).

Only transient failures are retried — HTTP 408/429/5xx, timeouts and connection errors —
with exponential backoff plus jitter so that many clients do not retry in lock-step.
Any other 4xx is a caller mistake (bad key, bad model name, oversized input): retrying
it only burns quota, so it fails fast as a :class:`ProviderHTTPError` carrying the status.
SDK-level retries should be switched off by the caller so this policy is the only one.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from uniko_memory.errors import ProviderError

__all__ = [
    "ProviderHTTPError",
    "RetryPolicy",
    "call_with_retry",
    "is_transient",
    "retrying",
    "status_code_of",
    "to_provider_error",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 425, 429})


class ProviderHTTPError(ProviderError):
    """A provider answered with an HTTP error status; ``status_code`` says which."""

    def __init__(self, message: str, status_code: int | None) -> None:
        super().__init__(message)
        self.status_code = status_code


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries (cohere ``ApiError``, httpx, ours), if any."""
    status = getattr(exc, "status_code", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _is_transport_error(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx comes with every HTTP SDK we wrap
        return False
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)


def is_transient(exc: BaseException) -> bool:
    """True when retrying ``exc`` may succeed: 408/425/429, 5xx, timeouts, connection errors."""
    status = status_code_of(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or 500 <= status < 600
    return _is_transport_error(exc)


def _retry_after(exc: BaseException | None) -> float | None:
    """Seconds from a ``Retry-After`` header (numeric form only), when the server sent one."""
    headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        value = {str(k).lower(): v for k, v in dict(headers).items()}.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _backoff(initial: float, max_delay: float) -> Callable[[RetryCallState], float]:
    """Exponential backoff with "equal jitter"; a server's Retry-After wins, capped at ``max_delay``."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hinted = _retry_after(exc)
        if hinted is not None:
            return min(hinted, max_delay)
        ceiling = min(max_delay, initial * 2 ** (state.attempt_number - 1))
        return ceiling / 2 + random.uniform(0.0, ceiling / 2)

    return wait


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning(
        "provider call failed (attempt %d: %s); retrying in %.2fs",
        state.attempt_number,
        type(exc).__name__ if exc else "?",
        delay,
    )


def retrying(*, max_attempts: int = 4, initial: float = 0.5, max_delay: float = 8.0) -> AsyncRetrying:
    """A tenacity ``AsyncRetrying`` applying the shared policy; the last error is re-raised."""
    if max_attempts < 1 or initial < 0 or max_delay < 0:
        raise ValueError("max_attempts must be >= 1 and delays >= 0")
    return AsyncRetrying(
        stop=stop_after_attempt(max_attempts),
        wait=_backoff(initial, max_delay),
        retry=retry_if_exception(is_transient),
        before_sleep=_log_retry,
        reraise=True,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Retry and timeout settings of one provider; tests pass tiny delays."""

    max_attempts: int = 4
    initial: float = 0.5
    max_delay: float = 8.0
    timeout: float = 30.0  # per HTTP request, seconds

    def build(self) -> AsyncRetrying:
        return retrying(max_attempts=self.max_attempts, initial=self.initial, max_delay=self.max_delay)


def _body_snippet(exc: BaseException) -> str:
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("message", body)
    text = str(body) if body is not None else ""
    return f": {text[:200]}" if text else ""


def to_provider_error(exc: BaseException, what: str) -> ProviderError:
    """Map any SDK/transport exception to our hierarchy (never echoing request headers or keys)."""
    if isinstance(exc, ProviderError):
        return exc
    status = status_code_of(exc)
    if status is not None:
        return ProviderHTTPError(f"{what} failed with HTTP {status}{_body_snippet(exc)}", status)
    return ProviderHTTPError(f"{what} failed: {type(exc).__name__}: {exc}", None)


async def call_with_retry(fn: Callable[[], Awaitable[T]], *, policy: RetryPolicy, what: str) -> T:
    """Run ``fn`` under ``policy``; every failure surfaces as a :class:`ProviderError`."""
    try:
        async for attempt in policy.build():
            with attempt:
                return await fn()
    except Exception as exc:
        raise to_provider_error(exc, what) from exc
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover
