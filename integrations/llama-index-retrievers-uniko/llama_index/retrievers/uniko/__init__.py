"""LlamaIndex retriever over uniko-memory's recall cascade."""

from llama_index.retrievers.uniko.base import UnikoRetriever

__all__ = ["UnikoRetriever"]
