"""Tuning of the embedded store's vectors: the at-rest format, the exact/ANN switch, the HNSW graph
and the filtered-search over-fetch. Every number a search or a build uses is a field here.

``UnikoConfig.store.embedded_vectors`` holds one; ``EmbeddedStore.open(..., vectors=...)`` takes one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EmbeddedVectorOptions(BaseModel):
    """Defaults chosen by measurement (NOTES of issue 20): exact search over 50,000 float32 rows
    takes a few ms; past it HNSW with ef 256 answers in ~1-3 ms at 100,000 rows. ef 256, not 128:
    chat memories hold many identical short turns ("ok", template replies), which cost an HNSW walk
    recall; at ef 256 the real MiniLM vectors of 20,000 synthetic turns keep 0.97-0.998 of the exact
    top 20 (by score), at 128 0.90-0.93."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: At-rest precision of a stored vector (``vector_codec``). float16 halves float32's bytes and
    #: moves a score by ~1e-4; int8 quarters them and moves a score by ~1e-3; float32 is exact. An
    #: ANN graph holds float16 for int8 and float16 rows. Every format is read back whatever the
    #: setting (a blob's length says which it is).
    storage: Literal["int8", "float16", "float32"] = "int8"
    #: Rows of one (agent, tier) from which an approximate (HNSW) index answers searches; below it
    #: an exact matrix in RAM does (int8 codes and a scale per row when ``storage`` is int8, a
    #: quarter of float32's bytes; float32 otherwise). 0 = always ANN (when the package is
    #: installed). An index that has switched to ANN stays ANN until the store is reopened.
    exact_below: int = Field(50_000, ge=0)
    #: HNSW graph degree (M): more = better recall, more memory and a slower build.
    ann_connectivity: int = Field(16, ge=4, le=128)
    #: Candidate list while inserting (ef_construction).
    ann_expansion_add: int = Field(128, ge=8, le=4096)
    #: Candidate list while searching (ef); a search for more than this many uses its count.
    ann_expansion_search: int = Field(256, ge=8, le=4096)
    #: Threads of a bulk build (opening a big tier, or a tier outgrowing ``exact_below``); 0 = every
    #: core. Single inserts after a commit use one thread.
    ann_build_threads: int = Field(0, ge=0)
    #: Keep a built ANN index in a cache file beside the database (``<db>.vidx/``), checked
    #: against SQLite on load and rebuilt when missing, stale or unreadable. False: rebuilt in RAM
    #: at every open.
    ann_cache: bool = True
    #: A filtered vector search checks up to max(k * this, ``filter_min_candidates``) of the best
    #: unfiltered candidates against the filter before scoring the admitted rows exactly.
    filter_overfetch: int = Field(8, ge=1)
    #: ... and at least this many.
    filter_min_candidates: int = Field(200, ge=1)
    #: On an ANN tier, when too few of those pass, the graph is searched again for up to this many
    #: candidates (as many as the share that passed says k needs, x ``filter_ann_widen_margin``)
    #: before the admitted rows are scored exactly (which costs a read of every admitted vector).
    filter_ann_max_candidates: int = Field(4096, ge=1)
    #: The margin of that second ANN search.
    filter_ann_widen_margin: float = Field(1.5, ge=1.0)
    #: Its first probe checks max(k * this, ``filter_first_min``) candidates, then widens x4.
    filter_first_factor: int = Field(3, ge=1)
    #: ... and at least this many.
    filter_first_min: int = Field(30, ge=1)
