"""Building weaviate-client v4 clients, and calling them with retries on transient errors only.

The store talks to either client flavour: a ``WeaviateAsyncClient`` is awaited directly, a sync
``WeaviateClient`` runs in worker threads. ``connect_*`` build an async client (connected) for the
usual deployments; pass ``skip_init_checks=True`` where the network is closed (it skips the gRPC
health probe and the PyPI version lookup the client otherwise makes on connect).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlparse

from ...errors import MissingDependency

T = TypeVar("T")

#: gRPC status codes worth retrying: the server or the network, not the request.
_TRANSIENT_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED"})
_TRANSIENT_HTTP = frozenset({408, 429, 502, 503, 504})
#: Per-object batch error texts that mean "try again", not "this object is bad".
TRANSIENT_MARKERS = ("timeout", "deadline exceeded", "unavailable", "connection reset", "too many requests")


def require_weaviate() -> Any:
    """Import ``weaviate`` or raise ``MissingDependency`` naming the extra."""
    try:
        import weaviate
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise MissingDependency("weaviate-client", "weaviate", "the Weaviate store") from exc
    return weaviate


def additional_config(
    *, init: float = 2.0, query: float = 30.0, insert: float = 90.0, trust_env: bool = False
) -> Any:
    weaviate = require_weaviate()
    from weaviate.classes.init import AdditionalConfig, Timeout

    del weaviate
    return AdditionalConfig(timeout=Timeout(init=init, query=query, insert=insert), trust_env=trust_env)


def _auth(api_key: str | None) -> Any:
    if api_key is None:
        return None
    from weaviate.classes.init import Auth

    return Auth.api_key(api_key)


async def connect_local(
    host: str = "localhost",
    port: int = 8080,
    grpc_port: int = 50051,
    *,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: tuple[float, float, float] = (2.0, 30.0, 90.0),
    skip_init_checks: bool = False,
) -> Any:
    """A connected ``WeaviateAsyncClient`` for a local server (e.g. ``docker run``)."""
    weaviate = require_weaviate()
    client = weaviate.use_async_with_local(
        host=host,
        port=port,
        grpc_port=grpc_port,
        headers=headers,
        additional_config=additional_config(init=timeout[0], query=timeout[1], insert=timeout[2]),
        skip_init_checks=skip_init_checks,
        auth_credentials=_auth(api_key),
    )
    await client.connect()
    return client


async def connect_custom(
    http_host: str,
    http_port: int,
    grpc_host: str,
    grpc_port: int,
    *,
    secure: bool = False,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: tuple[float, float, float] = (2.0, 30.0, 90.0),
    skip_init_checks: bool = False,
) -> Any:
    """A connected ``WeaviateAsyncClient`` for a self-hosted server on custom hosts/ports."""
    weaviate = require_weaviate()
    client = weaviate.use_async_with_custom(
        http_host=http_host,
        http_port=http_port,
        http_secure=secure,
        grpc_host=grpc_host,
        grpc_port=grpc_port,
        grpc_secure=secure,
        headers=headers,
        additional_config=additional_config(init=timeout[0], query=timeout[1], insert=timeout[2]),
        auth_credentials=_auth(api_key),
        skip_init_checks=skip_init_checks,
    )
    await client.connect()
    return client


async def connect_cloud(
    cluster_url: str,
    api_key: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: tuple[float, float, float] = (2.0, 30.0, 90.0),
    skip_init_checks: bool = False,
) -> Any:
    """A connected ``WeaviateAsyncClient`` for Weaviate Cloud (API key auth)."""
    weaviate = require_weaviate()
    client = weaviate.use_async_with_weaviate_cloud(
        cluster_url=cluster_url,
        auth_credentials=_auth(api_key),
        headers=headers,
        additional_config=additional_config(init=timeout[0], query=timeout[1], insert=timeout[2]),
        skip_init_checks=skip_init_checks,
    )
    await client.connect()
    return client


async def connect_url(
    url: str,
    *,
    grpc_url: str | None = None,
    api_key: str | None = None,
    timeout: tuple[float, float, float] = (2.0, 30.0, 90.0),
    skip_init_checks: bool = False,
) -> Any:
    """Connect from URLs (``WEAVIATE_URL`` / ``WEAVIATE_GRPC_URL``); gRPC defaults to port 50051 on the same host."""
    http = urlparse(url if "://" in url else f"http://{url}")
    secure = http.scheme == "https"
    grpc = (
        urlparse(grpc_url if grpc_url and "://" in grpc_url else f"http://{grpc_url}") if grpc_url else None
    )
    return await connect_custom(
        http.hostname or "localhost",
        http.port or (443 if secure else 8080),
        (grpc.hostname if grpc else None) or http.hostname or "localhost",
        (grpc.port if grpc else None) or (443 if secure and grpc else 50051),
        secure=secure,
        api_key=api_key,
        timeout=timeout,
        skip_init_checks=skip_init_checks,
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend([e.__cause__, e.__context__])


def is_transient(exc: BaseException) -> bool:
    """True for network/server hiccups worth retrying; False for anything the request itself caused."""
    import grpc
    from weaviate import exceptions as wex

    chain = list(_chain(exc))
    # The client has already retried with backoff (~7 s per batch, ~60 s per query): retrying
    # its give-up again would keep a caller waiting for minutes instead of failing clearly.
    if any(isinstance(e, wex.WeaviateRetryError) for e in chain):
        return False
    for e in chain:
        if isinstance(e, (wex.WeaviateConnectionError, wex.WeaviateTimeoutError, TimeoutError)):
            return True
        if isinstance(e, wex.UnexpectedStatusCodeError) and e.status_code in _TRANSIENT_HTTP:
            return True
        if isinstance(e, grpc.RpcError) and callable(getattr(e, "code", None)):
            try:
                name = getattr(e.code(), "name", "")
            except Exception:  # pragma: no cover - a half-built RpcError
                name = ""
            if name in _TRANSIENT_GRPC:
                return True
        if type(e).__module__.startswith("httpx") and type(e).__name__ in (
            "ConnectError",
            "ConnectTimeout",
            "ReadTimeout",
            "WriteTimeout",
            "PoolTimeout",
            "ReadError",
            "RemoteProtocolError",
        ):
            return True
    return False


class Caller:
    """Runs client calls (awaited for the async client, in a thread for the sync one) with retries."""

    def __init__(self, is_async: bool, attempts: int = 4, max_wait: float = 4.0) -> None:
        self.is_async = is_async
        self.attempts = max(1, attempts)
        self.max_wait = max_wait

    async def once(self, fn: Callable[[], Any]) -> Any:
        if self.is_async:
            result = fn()
            return await result if isinstance(result, Awaitable) else result
        return await asyncio.to_thread(fn)

    async def __call__(self, fn: Callable[[], Any]) -> Any:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_random_exponential(multiplier=0.05, max=self.max_wait),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self.once(fn)
        raise AssertionError("unreachable")  # pragma: no cover
