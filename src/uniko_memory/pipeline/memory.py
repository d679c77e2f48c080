"""Rate-limited release of freed heap (``uniko_memory.heap``) at the pipeline's idle points.

Called when the pipeline goes idle and after a consolidation cycle, at most once per
``PipelineConfig.release_memory_min_interval_secs``.
"""

from __future__ import annotations

import logging
import threading
import time

from ..heap import can_trim, malloc_trim

log = logging.getLogger(__name__)

__all__ = ["MemoryReleaser"]


class MemoryReleaser:
    """Rate-limited ``malloc_trim``: cheap to call at every idle point."""

    def __init__(self, enabled: bool, min_interval_secs: float) -> None:
        self.enabled = enabled and can_trim()
        self.min_interval_secs = min_interval_secs
        self.releases = 0
        self._last = float("-inf")
        self._lock = threading.Lock()

    def due(self) -> bool:
        return self.enabled and time.monotonic() - self._last >= self.min_interval_secs

    def release(self) -> None:
        """Trim now unless one ran within the interval (a few ms on a large heap; run it off the loop)."""
        with self._lock:
            if not self.due():
                return
            self._last = time.monotonic()
        try:
            malloc_trim()
            self.releases += 1
        except Exception:  # never let housekeeping fail the pipeline
            log.debug("malloc_trim failed", exc_info=True)
