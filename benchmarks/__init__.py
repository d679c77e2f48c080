"""Benchmarks for uniko-memory (not part of the installed package)."""
