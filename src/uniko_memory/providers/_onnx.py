"""Shared plumbing for the local ONNX models (embedder, cross-encoder) and token counting.

onnxruntime and tokenizers are optional (the ``local`` extra), so they are imported only
inside these functions; a missing one raises ``MissingDependency`` naming the extra.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.errors import MissingDependency

__all__ = [
    "MINILM_TOKENIZER_PATH",
    "MINILM_TOKENIZER_SHA256",
    "default_threads",
    "load_tokenizer",
    "make_session",
    "pad_encodings",
    "require",
]

#: The all-MiniLM-L6-v2 WordPiece tokenizer, vendored (Apache-2.0, see ``assets/NOTICE``).
MINILM_TOKENIZER_PATH = Path(__file__).parent / "embed" / "assets" / "all-MiniLM-L6-v2.tokenizer.json"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def require(module: str, *, package: str | None = None, extra: str = "local", purpose: str = "") -> Any:
    """Import an optional module or raise ``MissingDependency`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(package or module, extra, purpose) from exc


def default_threads() -> int:
    """Two intra-op threads by default: the measured sweet spot that leaves cores for the app."""
    return max(1, min(2, os.cpu_count() or 1))


def load_tokenizer(path: str | os.PathLike[str], *, max_length: int | None) -> Any:
    """Load a ``tokenizers`` file with padding off (we pad per batch) and optional truncation.

    The vendored MiniLM file ships with truncation 128 and fixed padding 128; both are
    overridden here so each caller gets exactly the behaviour it asks for.
    """
    tokenizers = require("tokenizers", purpose="tokenization")
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_padding()
    if max_length is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length=max_length)
    return tok


def make_session(model: str | os.PathLike[str] | bytes, threads: int) -> Any:
    """A CPU onnxruntime session (a model file, or a serialised graph) with a fixed intra-op
    thread count and no thread spinning."""
    ort = require("onnxruntime", purpose="local ONNX models")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Spinning worker threads burn CPU between small batches; the app shares these cores.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, sess_options=opts, providers=["CPUExecutionProvider"])


def pad_encodings(encodings: Sequence[Any]) -> dict[str, np.ndarray]:
    """Right-pad a batch of ``tokenizers.Encoding`` to its longest member (pad id 0)."""
    lengths = [len(e.ids) for e in encodings]
    width = max(lengths, default=0)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, (enc, n) in enumerate(zip(encodings, lengths, strict=True)):
        ids[row, :n] = enc.ids
        types[row, :n] = enc.type_ids
        mask[row, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
