"""Cohere client construction and calls shared by the embedder and the reranker.

The SDK retries 429/5xx itself (2 retries by default, fixed backoff); every call here passes
``request_options={"max_retries": 0}`` so that our :mod:`~uniko_memory.providers.retry`
policy is the only one in force. This works on cohere 5.x and 7.x alike.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from typing import Any

from uniko_memory.errors import ConfigError
from uniko_memory.providers._onnx import require
from uniko_memory.providers.retry import RetryPolicy, call_with_retry

__all__ = ["CohereCaller"]

API_KEY_ENV = "COHERE_API_KEY"


class CohereCaller:
    """Owns a Cohere V2 client (built here or injected) and calls it under the retry policy."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        client: Any,
        retry: RetryPolicy | None,
        purpose: str,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._owned_http: Any = None
        if client is None:
            cohere = require("cohere", extra="cohere", purpose=purpose)
            key = api_key or os.environ.get(API_KEY_ENV)
            if not key:
                raise ConfigError(f"Cohere needs an API key: pass api_key= or set {API_KEY_ENV}")
            httpx = require("httpx", extra="cohere", purpose=purpose)
            self._owned_http = httpx.AsyncClient(timeout=self.retry.timeout)
            kwargs: dict[str, Any] = {"api_key": key, "httpx_client": self._owned_http}
            if base_url is not None:  # else the SDK default (CO_API_URL or the public API)
                kwargs["base_url"] = base_url
            client = cohere.AsyncClientV2(**kwargs)
        self.client = client

    async def aclose(self) -> None:
        """Close the HTTP connection pool we created (an injected client is the caller's)."""
        if self._owned_http is not None:
            await self._owned_http.aclose()
            self._owned_http = None

    async def call(self, method: str, what: str, **kwargs: Any) -> Any:
        """``client.<method>(**kwargs)`` with SDK retries off and our policy applied."""
        fn: Callable[..., Any] = getattr(self.client, method)
        options = {"max_retries": 0, "timeout_in_seconds": max(1, round(self.retry.timeout))}

        async def once() -> Any:
            if inspect.iscoroutinefunction(fn):
                return await fn(**kwargs, request_options=options)
            # An injected sync ClientV2: keep the event loop free.
            return await asyncio.to_thread(fn, **kwargs, request_options=options)

        return await call_with_retry(once, policy=self.retry, what=what)
