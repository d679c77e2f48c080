"""Scope and visibility pushed into candidate generation: every channel asks the store for
admissible nodes only, so a filtered bundle is still full and nothing leaks past the viewer."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..model import Tier, node_class, participant_id, session_id
from ..store.filters import Filter, In, Range, all_of, visible_to
from .config import RecallConfig

log = logging.getLogger(__name__)


class OutOfScope:
    """Marker: the scope excludes a whole tier (e.g. Facts under a session filter)."""


OUT = OutOfScope()


@dataclass(frozen=True)
class Scope:
    """Per-tier store filters for one recall (``OUT`` when the scope excludes a tier)."""

    agent: str
    cfg: RecallConfig

    def filter_for(self, tier: Tier) -> Filter | OutOfScope | None:
        """The filter for ``tier``; ``OUT`` when the scope excludes the whole tier."""
        cls = node_class(tier)
        parts: list[Filter | None] = []
        if self.cfg.viewer is not None:
            parts.append(visible_to(self.cfg.viewer.admitted_values()))
        if self.cfg.sessions is not None:
            if cls.session_field is None:
                return OUT
            parts.append(In("session", tuple(session_id(self.agent, s) for s in self.cfg.sessions)))
        if self.cfg.participants is not None:
            if cls.participant_field is None:
                return OUT
            parts.append(
                In("participant", tuple(participant_id(self.agent, p) for p in self.cfg.participants))
            )
        if self.cfg.since is not None or self.cfg.until is not None:
            if cls.time_field is None:
                return OUT
            parts.append(Range("time", gte=self.cfg.since, lt=self.cfg.until))
            if tier is Tier.CHUNK and self.cfg.until is not None:
                # a chunk's turns must all fall inside the window, not just its first one
                parts.append(Range("end_time", lt=self.cfg.until))
        if self.cfg.categories is not None:
            if "category" not in cls.model_fields:
                return OUT
            parts.append(In("category", tuple(self.cfg.categories)))
        return all_of(*parts)

    def combine(self, tier: Tier, extra: Filter | None) -> Filter | OutOfScope | None:
        base = self.filter_for(tier)
        if isinstance(base, OutOfScope):
            return OUT
        return all_of(base, extra)


def note_unrestricted(cfg: RecallConfig, agent: str) -> None:
    if cfg.viewer is None:
        log.debug("recall for agent %s is unrestricted (no viewer set): all visibilities admitted", agent)
