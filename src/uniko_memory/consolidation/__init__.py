"""P4 consolidation: Observations → Facts with reinforcement, contradiction, drift and an audit trail.

``await run_cycle(store, config, embedder, agent)`` runs one cycle; ``forget`` holds the
deletion paths that re-evaluate Facts when their evidence is forgotten or deleted.
"""

from .cycle import CycleStats, confidence, embed_text, run_cycle
from .drift import CONTRADICTION, detect_drift
from .load import load_unprocessed
from .plan import build_clusters, group_votes, plan_group, subject_key
from .triples import LlmTripleSource, RuleTripleSource, TripleSource, parse_reply, rule_triple

__all__ = [
    "CONTRADICTION",
    "CycleStats",
    "LlmTripleSource",
    "RuleTripleSource",
    "TripleSource",
    "build_clusters",
    "confidence",
    "detect_drift",
    "embed_text",
    "group_votes",
    "load_unprocessed",
    "parse_reply",
    "plan_group",
    "rule_triple",
    "run_cycle",
    "subject_key",
]
