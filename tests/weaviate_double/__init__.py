"""An in-process Weaviate protocol double (REST on werkzeug + gRPC on ``grpc.server``) for tests.

Start one with ``WeaviateDouble().start()`` (ephemeral ports on 127.0.0.1) or share one per test
session with ``shared_double()``; drive it with the real weaviate-client. ``double.engine`` holds
the state, the request log (``record = True``) and the fault injection list. See README.md.
"""

from __future__ import annotations

import atexit
import socket
import threading
from concurrent import futures
from typing import Any

import grpc
from weaviate.proto.v1 import weaviate_pb2_grpc
from werkzeug.serving import WSGIRequestHandler, make_server

from .engine import DoubleError, Engine, Fault
from .grpc_api import WeaviateService, health_handler
from .rest_api import GRPC_MAX_MESSAGE, VERSION, RestApp

__all__ = ["VERSION", "DoubleError", "Engine", "Fault", "WeaviateDouble", "shared_double"]


class WeaviateDouble:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.engine = Engine()
        self.http_port = 0
        self.grpc_port = 0
        self._http: Any = None
        self._grpc: grpc.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> WeaviateDouble:
        self._http = make_server(
            self.host, 0, RestApp(self.engine), threaded=True, request_handler=_QuietHandler
        )
        self.http_port = self._http.server_port
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="weaviate-double-rest", daemon=True
        )
        self._thread.start()
        options = [
            ("grpc.max_receive_message_length", GRPC_MAX_MESSAGE),
            ("grpc.max_send_message_length", GRPC_MAX_MESSAGE),
        ]
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options)
        weaviate_pb2_grpc.add_WeaviateServicer_to_server(WeaviateService(self.engine), self._grpc)
        self._grpc.add_generic_rpc_handlers((health_handler(),))
        self.grpc_port = self._grpc.add_insecure_port(f"{self.host}:0")
        self._grpc.start()
        return self

    def stop(self) -> None:
        if self._grpc is not None:
            self._grpc.stop(grace=None)
            self._grpc = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def sync_client(self, **kwargs: Any) -> Any:
        """A connected sync ``WeaviateClient`` (init checks skipped: the network is closed)."""
        import weaviate

        return weaviate.connect_to_local(
            host=self.host, port=self.http_port, grpc_port=self.grpc_port, skip_init_checks=True, **kwargs
        )

    def async_client(self, **kwargs: Any) -> Any:
        """An unconnected ``WeaviateAsyncClient``; ``await client.connect()`` before use."""
        import weaviate

        return weaviate.use_async_with_local(
            host=self.host, port=self.http_port, grpc_port=self.grpc_port, skip_init_checks=True, **kwargs
        )


class _QuietHandler(WSGIRequestHandler):
    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle stalls

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


_shared: WeaviateDouble | None = None
_lock = threading.Lock()


def shared_double() -> WeaviateDouble:
    """One double per process (per test session), started on first use, stopped at exit."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = WeaviateDouble().start()
            atexit.register(_shared.stop)
        return _shared
