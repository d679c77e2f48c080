"""LlamaIndex memory block backed by uniko-memory."""

from llama_index.memory.uniko.base import (
    FLUSH_TOKENS,
    SHORT_TERM_TOKENS,
    UnikoMemoryBlock,
    memory_from_defaults,
)

__all__ = ["FLUSH_TOKENS", "SHORT_TERM_TOKENS", "UnikoMemoryBlock", "memory_from_defaults"]
