"""The double's gRPC side: ``weaviate.v1.Weaviate`` (Search, BatchObjects, BatchDelete, TenantsGet,
Aggregate) and ``grpc.health.v1.Health/Check``, built on the protobuf classes weaviate-client ships."""

from __future__ import annotations

import struct
import time
import uuid as uuid_lib
from typing import Any

import grpc
import numpy as np
from google.protobuf import json_format
from weaviate.proto.v1 import (
    aggregate_pb2,
    base_pb2,
    batch_delete_pb2,
    batch_pb2,
    health_weaviate_pb2,
    properties_pb2,
    search_get_pb2,
    tenants_pb2,
    weaviate_pb2_grpc,
)

from .engine import DoubleError, Engine, Obj, date_str

QUERY_MAXIMUM_RESULTS = 10_000
QUERY_DEFAULTS_LIMIT = 10
_OPS = {
    "OPERATOR_EQUAL": "Equal",
    "OPERATOR_NOT_EQUAL": "NotEqual",
    "OPERATOR_GREATER_THAN": "GreaterThan",
    "OPERATOR_GREATER_THAN_EQUAL": "GreaterThanEqual",
    "OPERATOR_LESS_THAN": "LessThan",
    "OPERATOR_LESS_THAN_EQUAL": "LessThanEqual",
    "OPERATOR_AND": "And",
    "OPERATOR_OR": "Or",
    "OPERATOR_NOT": "Not",
    "OPERATOR_LIKE": "Like",
    "OPERATOR_IS_NULL": "IsNull",
    "OPERATOR_CONTAINS_ANY": "ContainsAny",
    "OPERATOR_CONTAINS_ALL": "ContainsAll",
    "OPERATOR_CONTAINS_NONE": "ContainsNone",
}
_KIND = {
    "value_text": "text",
    "value_int": "int",
    "value_boolean": "bool",
    "value_number": "number",
    "value_text_array": "text[]",
    "value_int_array": "int[]",
    "value_boolean_array": "bool[]",
    "value_number_array": "number[]",
}


def filter_tree(f: base_pb2.Filters) -> dict[str, Any]:
    """A protobuf filter as the plain tree ``Engine.matches`` evaluates."""
    op = _OPS.get(base_pb2.Filters.Operator.Name(f.operator))
    if op is None:
        raise DoubleError(f"unsupported filter operator {f.operator}")
    if op in ("And", "Or", "Not"):
        return {"op": op, "filters": [filter_tree(g) for g in f.filters]}
    which = f.WhichOneof("test_value")
    if which is None:
        value: Any = False if op == "IsNull" else None
        kind = None
    else:
        raw = getattr(f, which)
        value = list(raw.values) if which.endswith("_array") else raw
        kind = _KIND.get(which)
    if f.HasField("target"):
        target = _target(f.target)
    elif len(f.on) == 1:
        target = {"property": f.on[0]}
    elif len(f.on) == 3:
        target = {"ref": f.on[0], "collection": f.on[1], "inner": {"property": f.on[2]}}
    else:
        raise DoubleError(f"unsupported filter path {list(f.on)}")
    return {"op": op, "target": target, "value": value, "kind": kind}


def _target(t: base_pb2.FilterTarget) -> dict[str, Any]:
    which = t.WhichOneof("target")
    if which == "property":
        return {"property": t.property}
    if which == "single_target":
        return {"ref": t.single_target.on, "inner": _target(t.single_target.target)}
    if which == "multi_target":
        m = t.multi_target
        return {"ref": m.on, "collection": m.target_collection, "inner": _target(m.target)}
    if which == "count":
        return {"ref": t.count.on, "count": True}
    raise DoubleError("filter without a target")


def unpack_vector(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype="<f4").astype(np.float32)


def query_vector(msg: Any) -> tuple[np.ndarray | None, str | None]:
    """(vector, target name) from a NearVector / Hybrid message, whichever field the client used."""
    targets = list(msg.targets.target_vectors) if msg.HasField("targets") else list(msg.target_vectors)
    target = targets[0] if targets else None
    if getattr(msg, "vector_bytes", b""):
        return unpack_vector(msg.vector_bytes), target
    if len(msg.vectors):
        return unpack_vector(msg.vectors[0].vector_bytes), target
    if getattr(msg, "vector_for_targets", None):
        vft = msg.vector_for_targets[0]
        return unpack_vector(vft.vector_bytes or vft.vectors[0].vector_bytes), vft.name
    if hasattr(msg, "near_vector") and msg.HasField("near_vector"):
        v, t = query_vector(msg.near_vector)
        return v, t or target
    if len(getattr(msg, "vector", [])):
        return np.asarray(msg.vector, dtype=np.float32), target
    return None, target


def batch_object(
    engine: Engine, o: batch_pb2.BatchObject
) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    p = o.properties
    props: dict[str, Any] = (
        json_format.MessageToDict(p.non_ref_properties) if p.HasField("non_ref_properties") else {}
    )
    for arr in p.text_array_properties:
        props[arr.prop_name] = list(arr.values)
    for arr in p.int_array_properties:
        props[arr.prop_name] = list(arr.values)
    for arr in p.boolean_array_properties:
        props[arr.prop_name] = list(arr.values)
    for arr in p.number_array_properties:
        vals = arr.values_bytes
        props[arr.prop_name] = list(struct.unpack(f"<{len(vals) // 8}d", vals)) if vals else list(arr.values)
    for name in p.empty_list_props:
        props[name] = []
    if len(p.object_properties) or len(p.object_array_properties):
        raise DoubleError("object properties are not supported by the double")
    types = engine.prop_types(engine.cls(o.collection))
    refs: dict[str, Any] = {}
    for r in p.single_target_ref_props:
        target = types[r.prop_name]["dataType"][0] if r.prop_name in types else "?"
        refs[r.prop_name] = [(target, str(uuid_lib.UUID(u))) for u in r.uuids]
    for r in p.multi_target_ref_props:
        refs[r.prop_name] = [(r.target_collection, str(uuid_lib.UUID(u))) for u in r.uuids]
    vectors = {v.name or "default": unpack_vector(v.vector_bytes) for v in o.vectors}
    if o.vector_bytes:
        vectors["default"] = unpack_vector(o.vector_bytes)
    elif len(o.vector):
        vectors["default"] = np.asarray(o.vector, dtype=np.float32)
    return props, vectors, refs


def to_value(v: Any, dt: str) -> properties_pb2.Value:
    if dt.endswith("[]"):
        base = dt[:-2]
        lv: dict[str, Any] = {}
        if base == "text":
            lv["text_values"] = properties_pb2.TextValues(values=v)
        elif base == "number":
            lv["number_values"] = properties_pb2.NumberValues(values=struct.pack(f"<{len(v)}d", *v))
        elif base == "int":
            lv["int_values"] = properties_pb2.IntValues(values=struct.pack(f"<{len(v)}q", *v))
        elif base == "boolean":
            lv["bool_values"] = properties_pb2.BoolValues(values=v)
        elif base == "date":
            lv["date_values"] = properties_pb2.DateValues(values=[date_str(x) for x in v])
        else:
            lv["uuid_values"] = properties_pb2.UuidValues(values=v)
        return properties_pb2.Value(list_value=properties_pb2.ListValue(**lv))
    if dt == "text":
        return properties_pb2.Value(text_value=v)
    if dt == "number":
        return properties_pb2.Value(number_value=v)
    if dt == "int":
        return properties_pb2.Value(int_value=v)
    if dt == "boolean":
        return properties_pb2.Value(bool_value=v)
    if dt == "date":
        return properties_pb2.Value(date_value=date_str(v))
    if dt == "uuid":
        return properties_pb2.Value(uuid_value=v)
    if dt == "blob":
        return properties_pb2.Value(blob_value=v)
    raise DoubleError(f"cannot return a {dt} property")


class WeaviateService(weaviate_pb2_grpc.WeaviateServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ plumbing
    def _guard(self, method: str, request: Any, context: grpc.ServicerContext, collection: str | None) -> Any:
        self.engine.log(method, request)
        wait = self.engine.delay(method, collection)
        if wait:
            time.sleep(wait)
        fault = self.engine.take_fault(method, collection)
        if fault is not None and not fault.per_object:
            context.abort(grpc.StatusCode.INTERNAL, fault.message)
        return fault

    @staticmethod
    def _abort(context: grpc.ServicerContext, exc: DoubleError) -> Any:
        context.abort(grpc.StatusCode.UNKNOWN if exc.status != 404 else grpc.StatusCode.NOT_FOUND, str(exc))

    # ------------------------------------------------------------------ search
    def Search(self, request: search_get_pb2.SearchRequest, context: grpc.ServicerContext) -> Any:
        self._guard("Search", request, context, request.collection)
        start = time.perf_counter()
        try:
            with self.engine.lock:
                results = self._search(request)
        except DoubleError as exc:
            return self._abort(context, exc)
        return search_get_pb2.SearchReply(took=time.perf_counter() - start, results=results)

    def _search(self, req: search_get_pb2.SearchRequest) -> list[search_get_pb2.SearchResult]:
        e = self.engine
        cname, tenant = e.cls(req.collection)["class"], req.tenant or None
        limit = req.limit or QUERY_DEFAULTS_LIMIT
        if limit + req.offset > QUERY_MAXIMUM_RESULTS:
            raise DoubleError(f"query maximum results exceeded: limit + offset > {QUERY_MAXIMUM_RESULTS}")
        flt = filter_tree(req.filters) if req.HasField("filters") else None
        rows = e.candidates(cname, tenant, flt)
        meta: dict[str, dict[str, Any]] = {}
        if req.HasField("bm25_search"):
            b = req.bm25_search
            op = b.search_operator
            scores = e.bm25(
                cname,
                tenant,
                b.query,
                list(b.properties),
                rows,
                "and" if op.operator == base_search_operator_and() else "or",
                op.minimum_or_tokens_match,
            )
            rows = [r for r in sorted(rows, key=lambda r: (-scores.get(r[0], 0.0), r[0])) if r[0] in scores]
            meta = {u: {"score": s} for u, s in scores.items()}
        elif req.HasField("near_vector"):
            nv = req.near_vector
            vec, target = query_vector(nv)
            if vec is None:
                raise DoubleError("near_vector without a vector")
            dist = e.distances(cname, target, vec, rows)
            if nv.HasField("distance"):
                dist = {u: d for u, d in dist.items() if d <= nv.distance}
            if nv.HasField("certainty"):
                dist = {u: d for u, d in dist.items() if 1 - d / 2 >= nv.certainty}
            rows = [r for r in sorted(rows, key=lambda r: (dist.get(r[0], 0.0), r[0])) if r[0] in dist]
            meta = {u: {"distance": d, "certainty": 1 - d / 2} for u, d in dist.items()}
        elif req.HasField("hybrid_search"):
            rows, meta = self._hybrid(cname, tenant, req.hybrid_search, rows, limit + req.offset)
        elif req.after:
            rows = [r for r in rows if r[0] > str(uuid_lib.UUID(req.after))]
        if len(req.sort_by):
            rows = e.sort_rows(rows, [(s.path[0], s.ascending) for s in req.sort_by])
        rows = rows[req.offset : req.offset + limit]
        return [self._result(cname, tenant, u, o, req, meta.get(u, {})) for u, o in rows]

    def _hybrid(
        self, cname: str, tenant: str | None, h: Any, rows: list[tuple[str, Obj]], wanted: int
    ) -> tuple[list[tuple[str, Obj]], dict[str, dict[str, Any]]]:
        e = self.engine
        alpha = h.alpha_param if h.use_alpha_param else h.alpha
        vec, target = query_vector(h)
        leg = max(wanted, e.hybrid_leg_limit)
        legs: list[tuple[float, dict[str, float]]] = []
        if alpha < 1:
            kw = e.bm25(cname, tenant, h.query, list(h.properties), rows)
            legs.append((1 - alpha, dict(sorted(kw.items(), key=lambda kv: (-kv[1], kv[0]))[:leg])))
        if alpha > 0:
            if vec is None:
                raise DoubleError("hybrid needs a vector: the collection has no vectorizer")
            dist = e.distances(cname, target, vec, rows)
            if h.HasField("vector_distance"):
                dist = {u: d for u, d in dist.items() if d <= h.vector_distance}
            best = sorted(dist.items(), key=lambda kv: (kv[1], kv[0]))[:leg]
            legs.append((alpha, {u: 1 - d for u, d in best}))
        fused: dict[str, float] = {}
        ranked = h.fusion_type == search_fusion_ranked()
        for weight, scores in legs:
            if not scores:
                continue
            if ranked:
                order = sorted(scores, key=lambda u: (-scores[u], u))
                part = {u: 1 / (60 + i + 1) for i, u in enumerate(order)}
            else:
                lo, hi = min(scores.values()), max(scores.values())
                part = {u: (s - lo) / (hi - lo) if hi > lo else 1.0 for u, s in scores.items()}
            for u, s in part.items():
                fused[u] = fused.get(u, 0.0) + weight * s
        by_id = dict(rows)
        out = [(u, by_id[u]) for u in sorted(fused, key=lambda u: (-fused[u], u))]
        return out, {u: {"score": s, "explain": f"hybrid fused {s:.6f}"} for u, s in fused.items()}

    def _props(self, cname: str, tenant: str | None, obj: Obj, preq: Any) -> search_get_pb2.PropertiesResult:
        e = self.engine
        types = e.prop_types(e.cls(cname))
        if preq is None or preq.return_all_nonref_properties:
            names = [
                n for n, t in types.items() if t["dataType"][0][0].islower() and t["dataType"][0] != "blob"
            ]
        else:
            names = list(preq.non_ref_properties)
        fields = {}
        for n in names:
            if n not in types:
                raise DoubleError(f"no such property {n!r} in class {cname}")
            if obj.props.get(n) is not None:
                fields[n] = to_value(obj.props[n], types[n]["dataType"][0])
        refs = []
        for rp in preq.ref_properties if preq is not None else []:
            linked = []
            for tcls, tid in obj.refs.get(rp.reference_property, []):
                if rp.target_collection and rp.target_collection != tcls:
                    continue
                tt = tenant if e.multi_tenant(e.cls(tcls)) else None
                tobj = e.shard(tcls, tt).get(tid)
                if tobj is None:
                    continue
                sub = self._props(tcls, tt, tobj, rp.properties if rp.HasField("properties") else None)
                sub.metadata.CopyFrom(
                    search_get_pb2.MetadataResult(id=tid, id_as_bytes=uuid_lib.UUID(tid).bytes)
                )
                linked.append(sub)
            refs.append(
                search_get_pb2.RefPropertiesResult(prop_name=rp.reference_property, properties=linked)
            )
        return search_get_pb2.PropertiesResult(
            non_ref_props=properties_pb2.Properties(fields=fields),
            ref_props=refs,
            target_collection=cname,
            ref_props_requested=bool(preq is not None and len(preq.ref_properties)),
        )

    def _result(
        self, cname: str, tenant: str | None, uid: str, obj: Obj, req: Any, extra: dict[str, Any]
    ) -> search_get_pb2.SearchResult:
        m = req.metadata
        md: dict[str, Any] = {"id": uid, "id_as_bytes": uuid_lib.UUID(uid).bytes}
        if m.creation_time_unix:
            md.update(creation_time_unix=obj.created, creation_time_unix_present=True)
        if m.last_update_time_unix:
            md.update(last_update_time_unix=obj.updated, last_update_time_unix_present=True)
        if m.distance and "distance" in extra:
            md.update(distance=extra["distance"], distance_present=True)
        if m.certainty and "certainty" in extra:
            md.update(certainty=extra["certainty"], certainty_present=True)
        if m.score and "score" in extra:
            md.update(score=extra["score"], score_present=True)
        if m.explain_score and "explain" in extra:
            md.update(explain_score=extra["explain"], explain_score_present=True)
        wanted = set(m.vectors) or (set(obj.vectors) if m.vector else set())
        vecs = [
            base_pb2.Vectors(
                name=n,
                vector_bytes=obj.vectors[n].astype("<f4").tobytes(),
                type=base_pb2.Vectors.VECTOR_TYPE_SINGLE_FP32,
            )
            for n in sorted(wanted)
            if n in obj.vectors and n != "default"
        ]
        if m.vector and "default" in obj.vectors:
            md["vector_bytes"] = obj.vectors["default"].astype("<f4").tobytes()
        props = self._props(cname, tenant, obj, req.properties if req.HasField("properties") else None)
        return search_get_pb2.SearchResult(
            properties=props, metadata=search_get_pb2.MetadataResult(vectors=vecs, **md)
        )

    # ------------------------------------------------------------------ batch
    def BatchObjects(self, request: batch_pb2.BatchObjectsRequest, context: grpc.ServicerContext) -> Any:
        first = request.objects[0].collection if len(request.objects) else None
        fault = self._guard("BatchObjects", request, context, first)
        start = time.perf_counter()
        errors = []
        for i, o in enumerate(request.objects):
            if fault is not None:
                errors.append(batch_pb2.BatchObjectsReply.BatchError(index=i, error=fault.message))
                continue
            try:
                props, vectors, refs = batch_object(self.engine, o)
                self.engine.put(o.collection, o.tenant or None, o.uuid, props, vectors, refs)
            except DoubleError as exc:
                errors.append(batch_pb2.BatchObjectsReply.BatchError(index=i, error=str(exc)))
            except (ValueError, KeyError) as exc:
                errors.append(batch_pb2.BatchObjectsReply.BatchError(index=i, error=f"invalid object: {exc}"))
        return batch_pb2.BatchObjectsReply(took=time.perf_counter() - start, errors=errors)

    def BatchDelete(self, request: batch_delete_pb2.BatchDeleteRequest, context: grpc.ServicerContext) -> Any:
        self._guard("BatchDelete", request, context, request.collection)
        start = time.perf_counter()
        e = self.engine
        try:
            with e.lock:
                cname = e.cls(request.collection)["class"]
                flt = filter_tree(request.filters)
                rows = e.candidates(cname, request.tenant or None, flt)
                if len(rows) > QUERY_MAXIMUM_RESULTS:
                    rows = rows[:QUERY_MAXIMUM_RESULTS]
                if not request.dry_run:
                    shard = e.shard(cname, request.tenant or None)
                    for u, _ in rows:
                        shard.pop(u, None)
        except DoubleError as exc:
            return self._abort(context, exc)
        objs = (
            [
                batch_delete_pb2.BatchDeleteObject(uuid=uuid_lib.UUID(u).bytes, successful=True)
                for u, _ in rows
            ]
            if request.verbose
            else []
        )
        return batch_delete_pb2.BatchDeleteReply(
            took=time.perf_counter() - start, failed=0, matches=len(rows), successful=len(rows), objects=objs
        )

    def TenantsGet(self, request: tenants_pb2.TenantsGetRequest, context: grpc.ServicerContext) -> Any:
        self._guard("TenantsGet", request, context, request.collection)
        try:
            with self.engine.lock:
                known = self.engine.tenants[self.engine.cls(request.collection)["class"]]
                names = list(request.names.values) if request.HasField("names") else sorted(known)
        except DoubleError as exc:
            return self._abort(context, exc)
        hot = tenants_pb2.TENANT_ACTIVITY_STATUS_HOT
        return tenants_pb2.TenantsGetReply(
            took=0.0, tenants=[tenants_pb2.Tenant(name=n, activity_status=hot) for n in names if n in known]
        )

    def Aggregate(self, request: aggregate_pb2.AggregateRequest, context: grpc.ServicerContext) -> Any:
        self._guard("Aggregate", request, context, request.collection)
        try:
            with self.engine.lock:
                cname = self.engine.cls(request.collection)["class"]
                flt = filter_tree(request.filters) if request.HasField("filters") else None
                n = len(self.engine.candidates(cname, request.tenant or None, flt))
        except DoubleError as exc:
            return self._abort(context, exc)
        return aggregate_pb2.AggregateReply(
            took=0.0, single_result=aggregate_pb2.AggregateReply.Single(objects_count=n)
        )


def base_search_operator_and() -> int:
    from weaviate.proto.v1 import base_search_pb2

    return int(base_search_pb2.SearchOperatorOptions.OPERATOR_AND)


def search_fusion_ranked() -> int:
    from weaviate.proto.v1 import base_search_pb2

    return int(base_search_pb2.Hybrid.FUSION_TYPE_RANKED)


def health_handler() -> grpc.GenericRpcHandler:
    def check(request: Any, context: grpc.ServicerContext) -> Any:
        return health_weaviate_pb2.WeaviateHealthCheckResponse(
            status=health_weaviate_pb2.WeaviateHealthCheckResponse.SERVING
        )

    return grpc.method_handlers_generic_handler(
        "grpc.health.v1.Health",
        {
            "Check": grpc.unary_unary_rpc_method_handler(
                check,
                request_deserializer=health_weaviate_pb2.WeaviateHealthCheckRequest.FromString,
                response_serializer=health_weaviate_pb2.WeaviateHealthCheckResponse.SerializeToString,
            )
        },
    )
