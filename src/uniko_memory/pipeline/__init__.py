"""The PipelineSystem: bounded queues, workers, error policies, dead letters, triggers, health;
and the orchestration the engine runs around it: ``Cycles`` (consolidation, the gated sweep,
session maintenance) and ``Forgetting`` (durable forget jobs in the agent's exclusive cycle)."""

from .cycles import Cycles
from .forgetting import Forgetting
from .steps import StepErrorPolicy, StepOutcome
from .system import PipelineHealth, PipelineSystem, QueueHealth

__all__ = [
    "Cycles",
    "Forgetting",
    "PipelineHealth",
    "PipelineSystem",
    "QueueHealth",
    "StepErrorPolicy",
    "StepOutcome",
]
