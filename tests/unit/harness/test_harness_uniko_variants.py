"""The uniko variants (with / without consolidation and sweep) register and run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.harness import systems as registry
from benchmarks.harness.convert import load_any
from benchmarks.harness.run import BenchConfig, run_benchmark
from benchmarks.harness.uniko_system import UnikoSystem
from tests.unit.ingest._support import FakeEmbedder

CONFIG = BenchConfig(item_limits=(1, 3), token_budgets=(150, 400), hit_rate_k=3, progress=False)


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registered factories use the default embedder; the fast fake one here."""
    monkeypatch.setattr("uniko_memory.providers.defaults.default_embedder", lambda cfg: FakeEmbedder())


def test_variants_are_registered() -> None:
    assert {"uniko", "uniko-noconsol", "uniko-nosweep"} <= set(registry.SYSTEMS)
    assert list(registry.resolve("uniko,uniko-noconsol")) == ["uniko", "uniko-noconsol"]
    plain, noconsol, nosweep = (registry.SYSTEMS[n]() for n in ("uniko", "uniko-noconsol", "uniko-nosweep"))
    assert isinstance(plain, UnikoSystem) and plain.consolidate and plain.sweep
    assert isinstance(noconsol, UnikoSystem) and not noconsol.consolidate and not noconsol.sweep
    assert isinstance(nosweep, UnikoSystem) and nosweep.consolidate and not nosweep.sweep


async def test_with_and_without_consolidation_in_one_run(data_dir: Path) -> None:
    dataset = load_any(data_dir / "locomo_tiny.json", "locomo")
    made: dict[str, UnikoSystem] = {}

    def keep(name: str):
        def factory() -> UnikoSystem:
            made[name] = registry.SYSTEMS[name]()  # type: ignore[assignment]
            return made[name]

        return factory

    names = ("uniko", "uniko-noconsol", "uniko-nosweep")
    report, records = await run_benchmark(dataset, {n: keep(n) for n in names}, CONFIG)
    assert list(report["systems"]) == list(names) and report["comparison"]["ours"] == list(names)
    for n in names:
        assert report["systems"][n]["runtime"]["questions"] == 5
        assert report["systems"][n]["quality"]["evidence_all@3"]["n"] == 3
    nodes = {n: made[n].setup_stats["nodes"] for n in names}
    assert nodes["uniko"].get("fact", 0) > 0 and nodes["uniko-nosweep"].get("fact", 0) > 0
    assert "fact" not in nodes["uniko-noconsol"]  # facts come only from consolidation
    assert nodes["uniko-noconsol"]["observation"] == nodes["uniko"]["observation"]
    assert "sweep_errors" in made["uniko"].setup_stats and made["uniko"].setup_stats["sweep_errors"] == {}
    assert "sweep_errors" not in made["uniko-nosweep"].setup_stats
    assert "consolidation_failed" not in made["uniko-noconsol"].setup_stats
    assert {r.system for r in records} == set(names)
    for n in names:  # every rendered text within its budget, and the bundle's own count is the harness's
        assert report["systems"][n]["over_budget"] == 0
        for stats in report["systems"][n]["rendered"].values():
            assert stats["max"] <= stats["budget"] and stats["own_count_differs"] == 0
    assert report["budget_violations"] == {}
