from __future__ import annotations

import httpx
import pytest

from uniko_memory.errors import ProviderError
from uniko_memory.providers.retry import (
    ProviderHTTPError,
    RetryPolicy,
    call_with_retry,
    is_transient,
    retrying,
    to_provider_error,
)


class StatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (StatusError(429), True),
        (StatusError(408), True),
        (StatusError(500), True),
        (StatusError(503), True),
        (StatusError(400), False),
        (StatusError(401), False),
        (StatusError(404), False),
        (StatusError(422), False),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (httpx.ConnectError("refused"), True),
        (httpx.ReadTimeout("slow"), True),
        (httpx.UnsupportedProtocol("ftp"), False),
        (ValueError("bug"), False),
    ],
)
def test_is_transient(exc: BaseException, expected: bool) -> None:
    assert is_transient(exc) is expected


def test_status_from_httpx_response() -> None:
    request = httpx.Request("POST", "http://x/v2/embed")
    err = httpx.HTTPStatusError("boom", request=request, response=httpx.Response(502, request=request))
    assert is_transient(err)
    mapped = to_provider_error(err, "call")
    assert isinstance(mapped, ProviderHTTPError) and mapped.status_code == 502


async def test_call_with_retry_counts_attempts() -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise StatusError(503)
        return "ok"

    policy = RetryPolicy(max_attempts=5, initial=0.001, max_delay=0.001)
    assert await call_with_retry(flaky, policy=policy, what="t") == "ok"
    assert calls == 3


async def test_call_with_retry_no_retry_on_4xx() -> None:
    calls = 0

    async def bad() -> None:
        nonlocal calls
        calls += 1
        raise StatusError(404)

    with pytest.raises(ProviderHTTPError) as info:
        await call_with_retry(bad, policy=RetryPolicy(initial=0.001), what="lookup")
    assert calls == 1 and info.value.status_code == 404 and "lookup" in str(info.value)


async def test_non_http_errors_are_wrapped_and_not_retried() -> None:
    calls = 0

    async def bug() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("oops")

    with pytest.raises(ProviderError, match="KeyError"):
        await call_with_retry(bug, policy=RetryPolicy(initial=0.001), what="t")
    assert calls == 1


def test_retrying_validates_arguments() -> None:
    with pytest.raises(ValueError):
        retrying(max_attempts=0)
