"""Recall cache keyed on every result-changing field, kept coherent by per-agent write generations.

``get`` records the agent's store generation; ``put`` drops the entry if any write landed for that
agent while the recall ran, so a cached bundle never hides a write. The generation is the store's
``current_generation`` where it has one (Weaviate: the agent's record shared by every process, one
read by id), so another process's write invalidates this process's entries too.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from .items import ContextBundle


async def shared_generation(store: Any, agent: str) -> int:
    """The agent's generation as every process on ``store`` sees it (this process's own for a
    store without ``current_generation``)."""
    current = getattr(store, "current_generation", None)
    return int(await current(agent)) if callable(current) else int(store.generation(agent))


class RecallCache:
    def __init__(self, max_entries: int = 256, ttl_seconds: float = 300.0) -> None:
        self.max_entries = max_entries
        self.ttl = ttl_seconds
        self._data: OrderedDict[str, tuple[float, int, ContextBundle]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(agent: str, query: str, result_key: dict[str, Any]) -> str:
        blob = json.dumps([agent, query, result_key], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str, generation: int) -> ContextBundle | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None or entry[1] != generation or time.monotonic() - entry[0] > self.ttl:
                if entry is not None:
                    del self._data[key]
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return entry[2].model_copy(deep=True)

    def put(self, key: str, generation_before: int, generation_after: int, bundle: ContextBundle) -> bool:
        if generation_before != generation_after:
            return False  # a write landed during the recall: this result may already be stale
        with self._lock:
            self._data[key] = (time.monotonic(), generation_after, bundle.model_copy(deep=True))
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return True

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
