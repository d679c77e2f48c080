"""Evaluation harness: a generic memory-eval format, converters, metrics, baselines and a runner.

See ``benchmarks/FORMAT.md`` for the dataset format and the metric definitions.
"""
