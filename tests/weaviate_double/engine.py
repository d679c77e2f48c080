"""The double's storage and brute-force semantics: schema, tenants, objects, filters, BM25, vectors.

Plain Python over dicts, one lock. Modelled on Weaviate's documented behaviour; what it cannot
prove about the real server is listed in README.md.
"""

from __future__ import annotations

import base64
import copy
import fnmatch
import math
import re
import threading
import time
import uuid as uuid_lib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

_WORD = re.compile(r"[^\W_]+")
_EN_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
TENANT_NAME = re.compile(r"^[A-Za-z0-9\-_]{1,64}$")


Pred = Callable[[str, "Obj"], bool]


class DoubleError(Exception):
    """An error the server reports; ``status`` is the HTTP code REST answers with."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Obj:
    props: dict[str, Any]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    refs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    created: int = 0
    updated: int = 0


@dataclass
class Fault:
    """An injected failure: the next ``times`` calls of ``method`` (on ``collection``, if set) fail."""

    method: str
    collection: str | None = None
    times: int = 1
    per_object: bool = False  # BatchObjects: report every object as failed instead of aborting
    message: str = "injected failure"


def _id_set(f: dict[str, Any] | None) -> set[str] | None:
    """The uuids a filter can match when it is an id ``Equal`` / ``ContainsAny`` (alone or inside
    an ``And``); None when it may match any object. The full predicate still applies."""
    if f is None:
        return None
    if f["op"] == "And":
        for g in f["filters"]:
            ids = _id_set(g)
            if ids is not None:
                return ids
        return None
    if f.get("target", {}).get("property") == "_id" and f["op"] in ("Equal", "ContainsAny"):
        v = f["value"]
        return {str(x).lower() for x in (v if isinstance(v, list) else [v])}
    return None


def tokens(text: str, tokenization: str) -> list[str]:
    if tokenization == "field":
        t = text.strip()
        return [t] if t else []
    if tokenization == "whitespace":
        return text.split()
    if tokenization == "lowercase":
        return text.lower().split()
    return [w.lower() for w in _WORD.findall(text)]


def parse_date(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise DoubleError(f"requires a string with a RFC3339 formatted date, but got {value!r}") from None
    if dt.tzinfo is None:
        raise DoubleError(f"date {value!r} has no timezone (RFC3339 needs one)")
    return dt


def date_str(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


_HNSW = {
    "skip": False,
    "cleanupIntervalSeconds": 300,
    "maxConnections": 32,
    "efConstruction": 128,
    "ef": -1,
    "dynamicEfMin": 100,
    "dynamicEfMax": 500,
    "dynamicEfFactor": 8,
    "vectorCacheMaxObjects": 1000000000000,
    "flatSearchCutoff": 40000,
    "distance": "cosine",
    "filterStrategy": "sweeping",
    "pq": {"enabled": False},
    "bq": {"enabled": False},
    "sq": {"enabled": False},
}
_FLAT = {"distance": "cosine", "vectorCacheMaxObjects": 1000000000000, "bq": {"enabled": False}}


def _index_config(kind: str, given: dict[str, Any] | None) -> dict[str, Any]:
    given = dict(given or {})
    if kind == "flat":
        return {**_FLAT, **given}
    if kind == "dynamic":
        return {
            "distance": given.get("distance", "cosine"),
            "threshold": given.get("threshold", 10000),
            "hnsw": {**_HNSW, **(given.get("hnsw") or {})},
            "flat": {**_FLAT, **(given.get("flat") or {})},
        }
    return {**_HNSW, **given}


def normalise_class(body: dict[str, Any]) -> dict[str, Any]:
    """Echo a class the way a server does: every default filled in (the client parses it strictly)."""
    c = copy.deepcopy(body)
    name = str(c.get("class", ""))
    if not re.match(r"^[A-Za-z][_0-9A-Za-z]*$", name):
        raise DoubleError(f"'{name}' is not a valid class name")
    c["class"] = name[0].upper() + name[1:]
    props = []
    for p in c.get("properties") or []:
        dt = p["dataType"]
        primitive = dt[0][0].islower()
        is_text = dt[0] in ("text", "text[]")
        q = {
            "name": p["name"],
            "dataType": dt,
            "indexFilterable": p.get("indexFilterable", True),
            "indexSearchable": p.get("indexSearchable", is_text) if primitive else False,
            "indexRangeFilters": p.get("indexRangeFilters", False),
        }
        if is_text:
            q["tokenization"] = p.get("tokenization") or "word"
        for k in ("description", "nestedProperties", "moduleConfig"):
            if k in p:
                q[k] = p[k]
        props.append(q)
    c["properties"] = props
    inv = c.get("invertedIndexConfig") or {}
    c["invertedIndexConfig"] = {
        "bm25": {"b": 0.75, "k1": 1.2, **(inv.get("bm25") or {})},
        "cleanupIntervalSeconds": inv.get("cleanupIntervalSeconds", 60),
        "indexNullState": inv.get("indexNullState", False),
        "indexPropertyLength": inv.get("indexPropertyLength", False),
        "indexTimestamps": inv.get("indexTimestamps", False),
        "stopwords": {"preset": "en", "additions": None, "removals": None, **(inv.get("stopwords") or {})},
        "usingBlockMaxWAND": True,
    }
    mt = c.get("multiTenancyConfig") or {}
    c["multiTenancyConfig"] = {
        "enabled": bool(mt.get("enabled", False)),
        "autoTenantCreation": bool(mt.get("autoTenantCreation", False)),
        "autoTenantActivation": bool(mt.get("autoTenantActivation", False)),
    }
    c["replicationConfig"] = {
        "factor": 1,
        "asyncEnabled": False,
        "deletionStrategy": "NoAutomatedResolution",
        **(c.get("replicationConfig") or {}),
    }
    c["shardingConfig"] = {
        "virtualPerPhysical": 128,
        "desiredCount": 1,
        "actualCount": 1,
        "desiredVirtualCount": 128,
        "actualVirtualCount": 128,
        "key": "_id",
        "strategy": "hash",
        "function": "murmur3",
    } | ({} if not c["multiTenancyConfig"]["enabled"] else {"desiredCount": 0, "actualCount": 0})
    if "vectorConfig" in c:
        for vc in c["vectorConfig"].values():
            vc.setdefault("vectorizer", {"none": {}})
            kind = vc.get("vectorIndexType") or "hnsw"
            vc["vectorIndexType"] = kind
            vc["vectorIndexConfig"] = _index_config(kind, vc.get("vectorIndexConfig"))
    else:
        c.setdefault("vectorizer", "none")
        kind = c.get("vectorIndexType") or "hnsw"
        c["vectorIndexType"] = kind
        c["vectorIndexConfig"] = _index_config(kind, c.get("vectorIndexConfig"))
    c.setdefault("moduleConfig", {})
    return c


class Engine:
    """All server state. Every public method takes the lock; callers pass plain Python values."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.classes: dict[str, dict[str, Any]] = {}
        self.data: dict[str, dict[str, dict[str, Obj]]] = {}  # class -> tenant ("" if none) -> uuid -> obj
        self.tenants: dict[str, dict[str, str]] = {}
        self.requests: list[tuple[str, Any]] = []  # (method, request) for wire-contract tests
        self.record = False
        self.faults: list[Fault] = []
        #: Injected latency: seconds to wait before serving ``(method, collection)`` (collection
        #: None = every collection), outside the lock, e.g. to widen race windows between processes.
        self.delays: dict[tuple[str, str | None], float] = {}
        self.hybrid_leg_limit = 100
        self.dims: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ faults and log
    def log(self, method: str, request: Any) -> None:
        if self.record:
            with self.lock:
                self.requests.append((method, request))

    def delay(self, method: str, collection: str | None) -> float:
        with self.lock:
            return self.delays.get((method, collection), self.delays.get((method, None), 0.0))

    def take_fault(self, method: str, collection: str | None) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.method == method and f.collection in (None, collection) and f.times > 0:
                    f.times -= 1
                    return f
        return None

    # ------------------------------------------------------------------ schema
    def cls(self, name: str) -> dict[str, Any]:
        c = self.classes.get(name) or self.classes.get(name[:1].upper() + name[1:])
        if c is None:
            raise DoubleError(f"class {name!r} not found", 404)
        return c

    def create_class(self, body: dict[str, Any]) -> dict[str, Any]:
        c = normalise_class(body)
        with self.lock:
            if c["class"] in self.classes:
                raise DoubleError(f"class name {c['class']!r} already exists")
            self.classes[c["class"]] = c
            self.data[c["class"]] = {}
            self.tenants[c["class"]] = {}
        return c

    def add_property(self, cname: str, prop: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            c = self.cls(cname)
            if prop["name"] in self.prop_types(c):
                raise DoubleError(f"property {prop['name']!r} already exists in class {c['class']}")
            (normalised,) = normalise_class({"class": c["class"], "properties": [prop]})["properties"]
            c["properties"].append(normalised)
            return normalised

    def delete_class(self, name: str) -> None:
        with self.lock:
            for d in (self.classes, self.data, self.tenants):
                d.pop(name, None)
            for key in [k for k in self.dims if k[0] == name]:
                del self.dims[key]

    def prop_types(self, c: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in c["properties"]}

    def multi_tenant(self, c: dict[str, Any]) -> bool:
        return bool(c["multiTenancyConfig"]["enabled"])

    def shard(self, cname: str, tenant: str | None, *, write: bool = False) -> dict[str, Obj]:
        """The objects of one tenant (or the only shard); raises as the server would."""
        c = self.cls(cname)
        name = c["class"]
        if not self.multi_tenant(c):
            if tenant:
                raise DoubleError(f"class {name} has multi-tenancy disabled, but request was with tenant")
            return self.data[name].setdefault("", {})
        if not tenant:
            raise DoubleError(f"class {name} has multi-tenancy enabled, but request was without tenant")
        if tenant not in self.tenants[name]:
            if not (write and c["multiTenancyConfig"]["autoTenantCreation"]):
                raise DoubleError(f'tenant not found: "{tenant}"')
            self.add_tenants(name, [tenant])
        return self.data[name].setdefault(tenant, {})

    def add_tenants(self, cname: str, names: list[str]) -> None:
        c = self.cls(cname)
        if not self.multi_tenant(c):
            raise DoubleError(f"multi-tenancy is not enabled for class {c['class']!r}")
        for n in names:
            if not TENANT_NAME.match(n):
                raise DoubleError(f"tenant name {n!r} is invalid")
            self.tenants[c["class"]].setdefault(n, "HOT")

    # ------------------------------------------------------------------ writes
    def coerce(self, c: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
        """Validate and type property values against the schema (no auto-schema: unknown props fail)."""
        types = self.prop_types(c)
        out: dict[str, Any] = {}
        for k, v in props.items():
            p = types.get(k)
            if p is None:
                raise DoubleError(
                    f"no such prop with name '{k}' found in class '{c['class']}' in the schema. "
                    "Check your schema files for which properties in this class are available"
                )
            if v is None:
                continue
            dt = p["dataType"][0]
            if dt.endswith("[]"):
                if not isinstance(v, list):
                    raise DoubleError(f"invalid {dt} property '{k}' on class '{c['class']}'")
                out[k] = [self._scalar(c, k, dt[:-2], x) for x in v]
            elif dt[0].isupper():
                continue
            else:
                out[k] = self._scalar(c, k, dt, v)
        return out

    @staticmethod
    def _scalar(c: dict[str, Any], k: str, dt: str, v: Any) -> Any:
        bad = DoubleError(f"invalid {dt} property '{k}' on class '{c['class']}': got {type(v).__name__}")
        if dt == "text":
            if not isinstance(v, str):
                raise bad
            return v
        if dt == "number":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise bad
            return float(v)
        if dt == "int":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
                raise bad
            return int(v)
        if dt == "boolean":
            if not isinstance(v, bool):
                raise bad
            return v
        if dt == "date":
            return parse_date(v)
        if dt == "uuid":
            return str(uuid_lib.UUID(str(v)))
        if dt == "blob":
            if not isinstance(v, str):
                raise bad
            base64.b64decode(v, validate=True)
            return v
        return v

    def put(
        self,
        cname: str,
        tenant: str | None,
        uid: str,
        props: dict[str, Any],
        vectors: dict[str, np.ndarray],
        refs: dict[str, list[tuple[str, str]]] | None = None,
    ) -> None:
        with self.lock:
            c = self.cls(cname)
            typed = self.coerce(c, props)
            named = c.get("vectorConfig")
            for name, vec in vectors.items():
                if named is not None and name not in named:
                    raise DoubleError(f"collection {c['class']} does not have a named vector {name!r}")
                known = self.dims.setdefault((c["class"], name), len(vec))
                if len(vec) != known:
                    raise DoubleError(
                        f"new node has a vector with length {len(vec)}. "
                        f"Existing nodes have vectors with length {known}"
                    )
            shard = self.shard(c["class"], tenant, write=True)
            now = int(time.time() * 1000)
            old = shard.get(str(uuid_lib.UUID(uid)))
            shard[str(uuid_lib.UUID(uid))] = Obj(
                typed,
                {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()},
                refs or {},
                old.created if old else now,
                now,
            )

    def add_reference(
        self, cname: str, tenant: str | None, uid: str, prop: str, target: tuple[str, str]
    ) -> None:
        with self.lock:
            c = self.cls(cname)
            p = self.prop_types(c).get(prop)
            if p is None or p["dataType"][0][0].islower():
                raise DoubleError(f"property {prop!r} of class {c['class']} is not a reference")
            obj = self.shard(c["class"], tenant).get(uid)
            if obj is None:
                raise DoubleError(f"source object {uid} not found", 404)
            tcls = self.cls(target[0] or p["dataType"][0])["class"]
            if tcls not in p["dataType"]:
                raise DoubleError(f"reference target {tcls} is not a target of {prop!r}")
            obj.refs.setdefault(prop, []).append((tcls, target[1]))

    # ------------------------------------------------------------------ filters
    def compile(self, cname: str, tenant: str | None, f: dict[str, Any] | None) -> Pred:
        """A predicate ``(uuid, obj) -> bool`` for a plain filter tree (see ``grpc_api.filter_tree``),
        with property types resolved and query values normalised once."""
        if f is None:
            return lambda u, o: True
        op = f["op"]
        if op in ("And", "Or", "Not"):
            parts = [self.compile(cname, tenant, g) for g in f["filters"]]
            if op == "And":
                return lambda u, o: all(p(u, o) for p in parts)
            if op == "Or":
                return lambda u, o: any(p(u, o) for p in parts)
            return lambda u, o: not any(p(u, o) for p in parts)
        target = f["target"]
        if "ref" in target:
            return self._compile_ref(cname, tenant, f)
        prop = target["property"]
        if prop == "_id":
            test = self._value_test(op, f["value"], "uuid", f.get("kind"))
            return lambda u, o: test(u)
        c = self.cls(cname)
        p = self.prop_types(c).get(prop)
        if p is None:
            raise DoubleError(f"no such prop with name '{prop}' found in class '{cname}' in the schema")
        if op == "IsNull":
            if not c["invertedIndexConfig"]["indexNullState"]:
                raise DoubleError("Nullstate must be indexed to be filterable! add `indexNullState: true`")
            want = bool(f["value"])
            return lambda u, o: (o.props.get(prop) is None) == want
        if not p.get("indexFilterable", True) and not p.get("indexRangeFilters"):
            raise DoubleError(f"property {prop!r} is not filterable")
        dt = p["dataType"][0]
        if dt in ("text", "text[]"):
            test = self._text_test(op, f["value"], p.get("tokenization", "word"))
        else:
            test = self._value_test(op, f["value"], dt, f.get("kind"))
        return lambda u, o: test(o.props.get(prop))

    def _compile_ref(self, cname: str, tenant: str | None, f: dict[str, Any]) -> Pred:
        target = f["target"]
        ref, coll = target["ref"], target.get("collection")
        if "count" in target:
            test = self._value_test(f["op"], f["value"], "int", f.get("kind"))
            return lambda u, o: test(len([t for t in o.refs.get(ref, []) if coll in (None, t[0])]))
        inner: dict[str, Pred] = {}

        def pred(u: str, o: Obj) -> bool:
            for tcls, tid in o.refs.get(ref, []):
                if coll not in (None, tcls):
                    continue
                if tcls not in inner:
                    inner[tcls] = self.compile(tcls, tenant, {**f, "target": target["inner"]})
                tobj = self.shard(tcls, tenant if self.multi_tenant(self.cls(tcls)) else None).get(tid)
                if tobj is not None and inner[tcls](tid, tobj):
                    return True
            return False

        return pred

    def _text_test(self, op: str, query: Any, tok: str) -> Callable[[Any], bool]:
        def have(value: Any) -> list[str]:
            return [t for v in (value if isinstance(value, list) else [value]) for t in tokens(v, tok)]

        if op == "Like":
            pattern = str(query) if tok == "field" else str(query).lower()
            return lambda v: v is not None and any(fnmatch.fnmatchcase(h, pattern) for h in have(v))
        if op in ("Equal", "NotEqual"):
            want = tokens(str(query), tok)
            hit = lambda v: v is not None and bool(want) and all(w in have(v) for w in want)  # noqa: E731
            return hit if op == "Equal" else (lambda v: not hit(v))
        if op in ("ContainsAny", "ContainsAll", "ContainsNone"):
            wants = [tokens(str(q), tok) for q in query]
            singles = {w[0] for w in wants if len(w) == 1}
            multi = [w for w in wants if len(w) > 1]

            def found(v: Any) -> list[bool]:
                h = have(v)
                hs = set(h)
                return [bool(hs & singles)] + [all(t in hs for t in w) for w in multi]

            if op == "ContainsAny":
                return lambda v: v is not None and any(found(v))
            if op == "ContainsAll":
                return lambda v: v is not None and all(all(t in set(have(v)) for t in w) for w in wants if w)
            return lambda v: v is None or not any(found(v))
        cmp = self._value_test(op, query, "text", None)
        return lambda v: cmp(
            None if v is None else (v[0] if isinstance(v, list) else v).strip() if tok == "field" else v
        )

    def _value_test(self, op: str, query: Any, dt: str, kind: str | None) -> Callable[[Any], bool]:
        base = dt.removesuffix("[]")
        expected = {"number": "number", "int": "int", "boolean": "bool"}.get(base, "text")
        if kind is not None and kind.removesuffix("[]") != expected and base != "uuid":
            raise DoubleError(
                f"invalid 'where' filter: data type filter cannot use value{kind.removesuffix('[]').title()} "
                f"on type {base}, use value{expected.title()} instead"
            )
        norm: Callable[[Any], Any] = (
            parse_date if base == "date" else (lambda q: str(q).lower()) if base == "uuid" else (lambda q: q)
        )
        q = [norm(x) for x in query] if isinstance(query, list) else norm(query)
        ops: dict[str, Callable[[Any], bool]] = {
            "Equal": lambda a: a == q,
            "NotEqual": lambda a: a != q,
            "GreaterThan": lambda a: a > q,
            "GreaterThanEqual": lambda a: a >= q,
            "LessThan": lambda a: a < q,
            "LessThanEqual": lambda a: a <= q,
        }
        if op in ("ContainsAny", "ContainsAll", "ContainsNone"):
            pool = set(q)
            if op == "ContainsAny":
                one = lambda vals: any(v in pool for v in vals)  # noqa: E731
            elif op == "ContainsAll":
                one = lambda vals: pool <= set(vals)  # noqa: E731
            else:
                one = lambda vals: not any(v in pool for v in vals)  # noqa: E731
            return lambda v: (op == "ContainsNone") if v is None else one(v if isinstance(v, list) else [v])
        if op not in ops:
            raise DoubleError(f"operator {op} is not supported for {dt}")
        test = ops[op]
        return lambda v: (
            op == "NotEqual" if v is None else any(test(x) for x in (v if isinstance(v, list) else [v]))
        )

    # ------------------------------------------------------------------ search
    def candidates(self, cname: str, tenant: str | None, f: dict[str, Any] | None) -> list[tuple[str, Obj]]:
        shard = self.shard(cname, tenant)
        pred = self.compile(cname, tenant, f)
        ids = _id_set(f)  # a lookup by id reads those objects, not the whole shard (as Weaviate does)
        rows = shard.items() if ids is None else ((u, shard[u]) for u in ids if u in shard)
        return sorted((u, o) for u, o in rows if pred(u, o))

    def bm25(
        self,
        cname: str,
        tenant: str | None,
        query: str,
        props: list[str],
        rows: list[tuple[str, Obj]],
        operator: str = "or",
        minimum: int = 0,
    ) -> dict[str, float]:
        c = self.cls(cname)
        types = self.prop_types(c)
        weights: dict[str, float] = {}
        for p in props or [
            n for n, t in types.items() if t.get("indexSearchable") and t["dataType"][0] in ("text", "text[]")
        ]:
            name, _, boost = p.partition("^")
            if name not in types or not types[name].get("indexSearchable"):
                raise DoubleError(f"property {name!r} is not searchable (indexSearchable false or unknown)")
            weights[name] = float(boost) if boost else 1.0
        stop = _EN_STOPWORDS if c["invertedIndexConfig"]["stopwords"]["preset"] == "en" else frozenset()
        k1 = float(c["invertedIndexConfig"]["bm25"]["k1"])
        b = float(c["invertedIndexConfig"]["bm25"]["b"])
        all_rows = list(self.shard(cname, tenant).items())
        scores: dict[str, float] = {}
        for name, weight in weights.items():
            tok = types[name].get("tokenization", "word")
            q = [t for t in dict.fromkeys(tokens(query, tok)) if t not in stop]
            docs = {u: self._doc_tokens(o.props.get(name), tok) for u, o in all_rows}
            n = len(docs)
            avgdl = (sum(len(d) for d in docs.values()) / n) if n else 0.0
            df = {t: sum(1 for d in docs.values() if t in d) for t in q}
            for u, _o in rows:
                d = docs.get(u, [])
                matched = [t for t in q if t in d]
                need = len(q) if operator == "and" else max(1, minimum)
                if len(matched) < need:
                    continue
                s = 0.0
                for t in matched:
                    tf = d.count(t)
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / (avgdl or 1)))
                scores[u] = scores.get(u, 0.0) + weight * s
        return {u: s for u, s in scores.items() if s > 0}

    @staticmethod
    def _doc_tokens(value: Any, tok: str) -> list[str]:
        if value is None:
            return []
        return [t for v in (value if isinstance(value, list) else [value]) for t in tokens(v, tok)]

    def distances(
        self, cname: str, target: str | None, vec: np.ndarray, rows: list[tuple[str, Obj]]
    ) -> dict[str, float]:
        c = self.cls(cname)
        named = c.get("vectorConfig")
        if named is not None:
            if target is None:
                if len(named) != 1:
                    raise DoubleError("multiple vectors configured: target vector is required")
                target = next(iter(named))
            if target not in named:
                raise DoubleError(f"target vector {target!r} not found")
            metric = named[target]["vectorIndexConfig"].get("distance", "cosine")
        else:
            target, metric = "default", c["vectorIndexConfig"].get("distance", "cosine")
        out: dict[str, float] = {}
        for u, o in rows:
            v = o.vectors.get(target)
            if v is None:
                continue
            if len(v) != len(vec):
                raise DoubleError(f"vector lengths don't match: {len(vec)} vs {len(v)}")
            if metric == "cosine":
                denom = float(np.linalg.norm(v) * np.linalg.norm(vec)) or 1.0
                out[u] = 1.0 - float(np.dot(v, vec)) / denom
            elif metric == "dot":
                out[u] = -float(np.dot(v, vec))
            else:
                out[u] = float(np.sum((v - vec) ** 2))
        return out

    def sort_rows(self, rows: list[tuple[str, Obj]], sort: list[tuple[str, bool]]) -> list[tuple[str, Obj]]:
        """Stable multi-key sort; nulls first ascending (last descending), like SQL."""
        out = list(rows)
        for prop, asc in reversed(sort):

            def key(row: tuple[str, Obj], prop: str = prop) -> tuple[int, Any]:
                v = row[0] if prop == "_id" else row[1].props.get(prop)
                return (0, "") if v is None else (1, v)

            out.sort(key=key, reverse=not asc)
        return out
