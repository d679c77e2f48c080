"""The PipelineSystem: bounded queues, workers, error policies, dead letters, triggers, health."""

from .steps import StepErrorPolicy, StepOutcome
from .system import PipelineHealth, PipelineSystem, QueueHealth

__all__ = ["PipelineHealth", "PipelineSystem", "QueueHealth", "StepErrorPolicy", "StepOutcome"]
