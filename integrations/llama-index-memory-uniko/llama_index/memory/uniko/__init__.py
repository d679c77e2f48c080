"""LlamaIndex memory block backed by uniko-memory."""

from llama_index.memory.uniko.base import UnikoMemoryBlock

__all__ = ["UnikoMemoryBlock"]
