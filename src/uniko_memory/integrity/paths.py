"""The reachability paths of a memory: every way a stored node can come back to a caller.

Each ``ReadPath`` has exactly one probe in ``integrity.audit`` (an unmapped value raises, so a new
path without its check fails the coverage test). A probe pins the flags of the paths it does not
test (graph walk, neighbour expansion, phase gates), so a leak is attributed to the mechanism
that let it through.
"""

from __future__ import annotations

from enum import StrEnum


class ReadPath(StrEnum):
    #: Raw store reads (the store contract: no redacted node from a search or a listing).
    STORE_FIND = "store.find"
    STORE_TEXT_SEARCH = "store.text_search"
    STORE_VECTOR_SEARCH = "store.vector_search"
    STORE_HYBRID_SEARCH = "store.hybrid_search"
    #: Recall with the cascade's gates, graph walk, neighbour and reply expansion off.
    RECALL = "recall"
    #: All three phases (chunks, passages), graph, neighbours and replies still off.
    RECALL_ALL_PHASES = "recall.all_phases"
    #: Only the graph walk added.
    RECALL_GRAPH = "recall.graph"
    #: Only the neighbouring-turn expansion added.
    RECALL_NEIGHBOURS = "recall.neighbours"
    #: Only the reply expansion (the answer to a question turn) added.
    RECALL_REPLIES = "recall.replies"
    #: The same recall served a second time from the recall cache.
    RECALL_CACHE = "recall.cache"
    #: The wake-up context (no query).
    WAKE_UP = "wake_up"


#: Why a returned node is a finding.
FORGOTTEN = "forgotten"
INVALIDATED = "invalidated"
OUT_OF_SCOPE = "out_of_scope"
PROBE_FAILURE = "probe_failure"
