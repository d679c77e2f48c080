"""Artifact ingest: text, Markdown, HTML and PDF documents become an Artifact and its Chunks.

``ArtifactIngest.ingest`` reads a path or bytes, stores the content-addressed bytes (SHA-256),
the Artifact node and its chunks in one store unit, then embeds the chunks. See docs/artifacts.md.
"""

from .extract import Extraction, Section, extract
from .formats import SUPPORTED, resolve_mime
from .ingest import ArtifactIngest, ArtifactReport, ArtifactSource, artifact_node_id

__all__ = [
    "SUPPORTED",
    "ArtifactIngest",
    "ArtifactReport",
    "ArtifactSource",
    "Extraction",
    "Section",
    "artifact_node_id",
    "extract",
    "resolve_mime",
]
