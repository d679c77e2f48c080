"""The cortex: P5 procedures, P6 topics, F50 decay, session summaries, and the sweep cadence."""

from .decay import decay_episodes, decay_score
from .procedures import (
    SUCCESS,
    PromotionStats,
    action_type_for,
    action_type_of_intent,
    match_procedures,
    parse_precondition,
    precondition_holds,
    procedure_id,
    procedure_settings_for,
    promote_procedures,
    record_procedure_use,
)
from .sessions import summarize_session
from .sweep import SweepGate, SweepReport, run_sweep
from .topics import TopicStats, cooccurrence, detect_topics, label_propagation

__all__ = [
    "SUCCESS",
    "PromotionStats",
    "SweepGate",
    "SweepReport",
    "TopicStats",
    "action_type_for",
    "action_type_of_intent",
    "cooccurrence",
    "decay_episodes",
    "decay_score",
    "detect_topics",
    "label_propagation",
    "match_procedures",
    "parse_precondition",
    "precondition_holds",
    "procedure_id",
    "procedure_settings_for",
    "promote_procedures",
    "record_procedure_use",
    "run_sweep",
    "summarize_session",
]
