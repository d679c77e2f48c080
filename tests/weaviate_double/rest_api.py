"""The double's REST side (werkzeug WSGI): meta, readiness, schema, tenants, objects, references, nodes."""

from __future__ import annotations

import json
import uuid as uuid_lib
from typing import Any

import numpy as np
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from .engine import DoubleError, Engine, date_str

VERSION = "1.32.0"
GRPC_MAX_MESSAGE = 104_858_000


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


def _error(message: str, status: int = 422) -> Response:
    return _json({"error": [{"message": message}]}, status)


def _beacon(beacon: str) -> tuple[str | None, str]:
    """``weaviate://localhost/[Class/]uuid``: (class or None, uuid)."""
    parts = beacon.removeprefix("weaviate://").split("/")[1:]
    if len(parts) not in (1, 2):
        raise DoubleError(f"invalid beacon {beacon!r}")
    return (parts[0] if len(parts) == 2 else None), str(uuid_lib.UUID(parts[-1]))


class RestApp:
    """A WSGI app over the shared ``Engine``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url_map = Map(
            [
                Rule("/v1/meta", endpoint="meta"),
                Rule("/v1/.well-known/ready", endpoint="ok"),
                Rule("/v1/.well-known/live", endpoint="ok"),
                Rule("/v1/.well-known/openid-configuration", endpoint="openid"),
                Rule("/v1/nodes", endpoint="nodes"),
                Rule("/v1/schema", endpoint="schema"),
                Rule("/v1/schema/<cls>", endpoint="schema_class"),
                Rule("/v1/schema/<cls>/tenants", endpoint="tenants"),
                Rule("/v1/schema/<cls>/properties", endpoint="add_property", methods=["POST"]),
                Rule("/v1/objects", endpoint="objects", methods=["POST"]),
                Rule("/v1/objects/<cls>/<uid>", endpoint="object"),
                Rule("/v1/objects/<cls>/<uid>/references/<prop>", endpoint="reference", methods=["POST"]),
                Rule("/v1/batch/references", endpoint="batch_references", methods=["POST"]),
            ]
        )

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            endpoint, args = self.url_map.bind_to_environ(environ).match()
            self.engine.log(f"REST {request.method} {request.path}", request.get_data(as_text=True))
            response = getattr(self, "on_" + endpoint)(request, **args)
        except DoubleError as exc:
            response = _error(str(exc), exc.status)
        except NotFound:
            response = _error(f"no route {request.path}", 404)
        except HTTPException as exc:
            response = exc.get_response()
        return response(environ, start_response)

    # ------------------------------------------------------------------ misc
    def on_meta(self, request: Request) -> Response:
        return _json(
            {
                "hostname": "http://[::]:8080",
                "version": VERSION,
                "modules": {},
                "grpcMaxMessageSize": GRPC_MAX_MESSAGE,
            }
        )

    def on_ok(self, request: Request) -> Response:
        return Response(status=200)

    def on_openid(self, request: Request) -> Response:
        return Response(status=404)

    def on_nodes(self, request: Request) -> Response:
        with self.engine.lock:
            count = sum(len(s) for d in self.engine.data.values() for s in d.values())
        node = {
            "name": "double-0",
            "status": "HEALTHY",
            "version": VERSION,
            "gitHash": "double",
            "batchStats": {"queueLength": 0, "ratePerSecond": 0},
            "stats": {"objectCount": count, "shardCount": 1},
            "shards": [],
        }
        return _json({"nodes": [node]})

    # ------------------------------------------------------------------ schema
    def on_schema(self, request: Request) -> Response:
        if request.method == "POST":
            return _json(self.engine.create_class(request.get_json()))
        with self.engine.lock:
            return _json({"classes": list(self.engine.classes.values())})

    def on_schema_class(self, request: Request, cls: str) -> Response:
        e = self.engine
        if request.method == "DELETE":
            e.delete_class(cls)
            return Response(status=200)
        with e.lock:
            if cls not in e.classes:
                return _error(f"class {cls} not found", 404)
            return _json(e.classes[cls])

    def on_add_property(self, request: Request, cls: str) -> Response:
        return _json(self.engine.add_property(cls, request.get_json()))

    def on_tenants(self, request: Request, cls: str) -> Response:
        e = self.engine
        with e.lock:
            name = e.cls(cls)["class"]
            if request.method == "GET":
                return _json([{"name": n, "activityStatus": s} for n, s in sorted(e.tenants[name].items())])
            body = request.get_json()
            if request.method == "DELETE":
                for n in body:
                    e.tenants[name].pop(n, None)
                    e.data[name].pop(n, None)
                return Response(status=200)
            e.add_tenants(name, [t["name"] for t in body])
            return _json([{"name": t["name"], "activityStatus": "HOT"} for t in body])

    # ------------------------------------------------------------------ objects
    def on_objects(self, request: Request) -> Response:
        body = request.get_json()
        uid = str(uuid_lib.UUID(body.get("id") or str(uuid_lib.uuid4())))
        self._put(body["class"], body.get("tenant"), uid, body)
        return _json({**body, "id": uid})

    def _put(self, cls: str, tenant: str | None, uid: str, body: dict[str, Any]) -> None:
        vectors = {k: np.asarray(v, dtype=np.float32) for k, v in (body.get("vectors") or {}).items()}
        if body.get("vector"):
            vectors["default"] = np.asarray(body["vector"], dtype=np.float32)
        self.engine.put(cls, tenant, uid, body.get("properties") or {}, vectors)

    def on_object(self, request: Request, cls: str, uid: str) -> Response:
        e = self.engine
        tenant = request.args.get("tenant")
        uid = str(uuid_lib.UUID(uid))
        if request.method in ("PUT", "PATCH"):
            body = request.get_json()
            if request.method == "PATCH":
                with e.lock:
                    old = e.shard(cls, tenant).get(uid)
                    if old is None:
                        return _error("object not found", 404)
                    body = {**body, "properties": {**old.props, **(body.get("properties") or {})}}
            self._put(cls, tenant or body.get("tenant"), uid, body)
            return _json({**body, "id": uid}) if request.method == "PUT" else Response(status=204)
        with e.lock:
            shard = e.shard(cls, tenant)
            obj = shard.get(uid)
            if obj is None:
                return _error("object not found", 404)
            if request.method == "DELETE":
                del shard[uid]
                return Response(status=204)
            if request.method == "HEAD":
                return Response(status=204)
            props = {k: date_str(v) if hasattr(v, "isoformat") else v for k, v in obj.props.items()}
            return _json({"class": e.cls(cls)["class"], "id": uid, "properties": props, "tenant": tenant})

    def on_reference(self, request: Request, cls: str, uid: str, prop: str) -> Response:
        target = _beacon(request.get_json()["beacon"])
        self.engine.add_reference(cls, request.args.get("tenant"), str(uuid_lib.UUID(uid)), prop, target)
        return Response(status=200)

    def on_batch_references(self, request: Request) -> Response:
        out = []
        for ref in request.get_json():
            try:
                parts = ref["from"].removeprefix("weaviate://").split("/")
                cls, uid, prop = parts[1], str(uuid_lib.UUID(parts[2])), parts[3]
                self.engine.add_reference(cls, ref.get("tenant"), uid, prop, _beacon(ref["to"]))
                out.append({**ref, "result": {"status": "SUCCESS"}})
            except (DoubleError, ValueError, IndexError, KeyError) as exc:
                out.append(
                    {**ref, "result": {"status": "FAILED", "errors": {"error": [{"message": str(exc)}]}}}
                )
        return _json(out)
