"""``RecallConfig``: the recall tuning (``config.RecallTuning``, in groups) plus the per-call scope.

Tuning is nested: ``cfg.phases.phase2_coverage_gate``, ``cfg.graph.damping``, ``cfg.fusion.rrf_k``
... (``config.RECALL_GROUPS``); ``UnikoConfig.recall`` holds the same groups, so
``RecallConfig.from_uniko_config(cfg)`` (the runtime path) copies them as they are. The per-call
scope is flat: ``token_budget``, ``limit``, ``layout``, ``sessions``, ``participants``, ``since``,
``until``, ``categories``, ``viewer``, ``reference_ts``, ``explain``, ``use_cache``.
``with_options(**options)`` is what ``Agent.recall(query, **options)`` applies: scope fields by
name, a tuning group as a partial dict (``phases={"phase2_coverage_gate": 0.5}``).
``RecallConfig.preset(name)`` reads the one preset table (``config.PRESETS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import Field, model_validator

from ..config import (
    DEFAULT_CHANNEL_WEIGHTS,
    DEFAULT_EDGE_WEIGHTS,
    DEFAULT_TIER_WEIGHTS,
    RECALL_GROUPS,
    RecallBreadth,
    RecallChannels,
    RecallFeedback,
    RecallFusion,
    RecallGraph,
    RecallIntent,
    RecallPacking,
    RecallPhases,
    RecallRerank,
    RecallTuning,
    preset_named,
)
from ..errors import ConfigError
from ..model import Viewer
from ..model.time import UtcDatetime

if TYPE_CHECKING:
    from ..config import UnikoConfig

__all__ = [
    "DEFAULT_CHANNEL_WEIGHTS",
    "DEFAULT_EDGE_WEIGHTS",
    "DEFAULT_TIER_WEIGHTS",
    "LEARNED_SETTINGS",
    "SCOPE_FIELDS",
    "RecallBreadth",
    "RecallChannels",
    "RecallConfig",
    "RecallFeedback",
    "RecallFusion",
    "RecallGraph",
    "RecallIntent",
    "RecallPacking",
    "RecallPhases",
    "RecallRerank",
    "RecallTuning",
]

#: The per-call fields (flat keyword options of ``Agent.recall``), besides the tuning groups.
SCOPE_FIELDS = (
    "token_budget",
    "limit",
    "layout",
    "sessions",
    "participants",
    "since",
    "until",
    "categories",
    "viewer",
    "reference_ts",
    "explain",
    "use_cache",
)
#: The recall settings a query Episode records (flat, as stored in its state) and the group each
#: lives in (None: top level); a Procedure hands them back (``cortex.procedures.SETTING_KEYS``).
LEARNED_SETTINGS: dict[str, str | None] = {
    "token_budget": None,
    "limit": None,
    "phase1_strategy": "phases",
    "query_variants": "intent",
}


class RecallConfig(RecallTuning):
    """Recall tuning plus the scope of one call (see the module docstring)."""

    #: "grouped" (one heading per date: the prompt form) or "standalone" (every entry dated, one
    #: text per item: the retrievers' Documents); the budget is charged for this layout.
    layout: Literal["grouped", "standalone"] = "grouped"
    #: Who is asking: only memories whose visibility admits this viewer; None = unrestricted.
    viewer: Viewer | None = None
    #: Recall from these sessions only (their external ids).
    sessions: list[str] | None = None
    #: Recall what these participants said only.
    participants: list[str] | None = None
    #: Recall from this time on (inclusive).
    since: UtcDatetime | None = None
    #: Recall from before this time.
    until: UtcDatetime | None = None
    #: Recall nodes of these categories only.
    categories: list[str] | None = None
    #: What relative phrases in the question ("last May") are relative to (default: now).
    reference_ts: UtcDatetime | None = None
    #: Attach the cascade's trace (phases, channels, scores) to the bundle.
    explain: bool = False
    #: Serve a repeated recall from the recall cache.
    use_cache: bool = True
    #: Read your writes: a recall first waits, at most this many seconds, for the background work
    #: of this agent's turns already observed in this process (their vectors and statements: what
    #: ``Agent.flush`` waits for), so a turn just written is found and scored as after a flush.
    #: Past the wait it goes on with what is stored (a turn without its vector yet is found by its
    #: words). Nothing pending: no wait. 0 never waits.
    read_after_write_secs: float = Field(5.0, ge=0.0)
    #: A Message longer than this (characters) is quoted by its best passage, if it has passages
    #: (``recall.passages``). Not tuning: it follows how the memory was stored, so
    #: ``from_uniko_config`` sets it from ``ChunkingConfig.message_chunk_threshold`` (tokens <= characters).
    passage_min_chars: int = Field(1024, ge=0)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.since and self.until and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    @classmethod
    def from_uniko_config(cls, cfg: UnikoConfig, **overrides: Any) -> RecallConfig:
        """The engine's recall config: ``cfg.recall`` as it is, then ``overrides`` (as ``with_options``)."""
        data: dict[str, Any] = {
            **cfg.recall.model_dump(),
            "passage_min_chars": cfg.chunking.message_chunk_threshold,
        }
        return cls.build(_merge(data, overrides))

    @classmethod
    def build(cls, data: dict[str, Any]) -> RecallConfig:
        from pydantic import ValidationError as PydanticValidationError

        try:
            return cls.model_validate(data)
        except PydanticValidationError as exc:
            raise ConfigError(f"invalid RecallConfig: {exc}") from None

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> RecallConfig:
        """The recall side of the preset ``name`` of ``config.PRESETS``, then ``overrides``."""
        return cls.from_uniko_config(preset_named(name).config, **overrides)

    def with_options(self, **options: Any) -> RecallConfig:
        """A validated copy with per-call ``options``: scope fields by name, a tuning group as a
        partial dict merged over this config's (or a whole group object)."""
        return type(self).build(_merge(self.model_dump(), options))

    def learned_settings(self) -> dict[str, Any]:
        """The ``LEARNED_SETTINGS`` of this config, flat, as a query Episode records them."""
        out: dict[str, Any] = {}
        for name, group in LEARNED_SETTINGS.items():
            value = getattr(getattr(self, group) if group else self, name)
            out[name] = list(value) if isinstance(value, list) else value
        return out

    def with_learned_settings(self, settings: Mapping[str, Any]) -> RecallConfig:
        """This config with the known ``LEARNED_SETTINGS`` of ``settings`` (others are ignored)."""
        options: dict[str, Any] = {}
        for name, value in settings.items():
            if name not in LEARNED_SETTINGS:
                continue
            group = LEARNED_SETTINGS[name]
            if group is None:
                options[name] = value
            else:
                options.setdefault(group, {})[name] = value
        return self.with_options(**options) if options else self

    def scaled_k(self, k: int) -> int:
        """A channel's top-k scaled by the token budget (never below the reference value)."""
        if k <= 0:
            return 0
        b = self.breadth
        scale = max(1.0, b.per_1k_tokens * min(self.token_budget, b.scale_cap_tokens) / 1000)
        return max(k, round(k * scale))

    def result_key(self) -> dict[str, Any]:
        """Every field that changes the result set (the cache key): all tuning groups and the scope;
        explain changes only the trace, use_cache only whether the cache is read,
        read_after_write_secs only how long a recall waits for pending writes."""
        return self.model_dump(mode="json", exclude={"explain", "use_cache", "read_after_write_secs"})


def _merge(data: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` over ``data``: a tuning group given as a mapping updates that group's fields."""
    out = dict(data)
    for name, value in options.items():
        if name in RECALL_GROUPS and isinstance(value, Mapping) and isinstance(out.get(name), Mapping):
            out[name] = {**out[name], **value}
        else:
            out[name] = value
    return out
