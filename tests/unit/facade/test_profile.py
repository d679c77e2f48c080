"""``agent.profile(name, max_tokens)`` (issue 39.5): what is true now about one participant, within
its budget on the rendered text, every line dated and cited; superseded values left out; a past
``reference_ts`` shows the value that held then."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.ingest._support import open_uni
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.providers.token_counter import default_token_counter

pytestmark = pytest.mark.asyncio(loop_scope="module")
T = datetime(2024, 3, 4, 9, tzinfo=UTC)
SAID = [
    ("s1", 0, "Maya", "I live in Paris and I work at Acme as a designer."),
    ("s1", 1, "Maya", "My cat Miso is three years old."),
    ("s1", 2, "Sam", "I'm a vegetarian, have been for years."),
    ("s2", 20, "Maya", "We moved to Lyon last week, the flat is lovely."),
    ("s2", 21, "Maya", "I'm vegan now, it was easier than I thought."),
    ("s3", 40, "Maya", "Since I joined Northwind I barely have time to cook."),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await open_uni({"pipeline": {"consolidation_threshold": 1000}}, real_embedder=True)
    agent = u.agent("a")
    for session, day, who, text in SAID:
        other = "Sam" if who == "Maya" else "Maya"
        turn = Turn(sender=who, content=text, at=T + timedelta(days=day), addressed_to=other)
        await agent.session(session).observe(turn)
    await agent.flush()
    await agent.consolidate()
    try:
        yield u
    finally:
        await u.close()


async def test_the_profile_holds_current_values_dated_and_cited(uni: Uniko) -> None:
    bundle = await uni.agent("a").profile("Maya", 400)
    text = bundle.render()
    assert bundle.total_tokens <= 400 and default_token_counter().count(text) == bundle.total_tokens
    assert "Lyon" in text and "Paris" not in text  # the move replaced the old home
    assert "Northwind" in text and "Acme" not in text
    assert "vegan" in text
    assert "Sam" not in text  # Sam's diet is Sam's
    assert all(item.sources for item in bundle.items)
    assert all(("as of" in i.rendered) or any(ch.isdigit() for ch in i.rendered) for i in bundle.items)
    residence = next(i for i in bundle.items if "Lyon" in i.rendered)
    assert residence.rendered.startswith("residence: ")


async def test_as_of_a_past_moment_the_profile_holds_the_value_then(uni: Uniko) -> None:
    text = (await uni.agent("a").profile("Maya", 400, reference_ts=T + timedelta(days=5))).render()
    assert "Paris" in text and "Lyon" not in text and "no longer true" not in text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=1, max_value=600), name=st.sampled_from(["Maya", "Sam", "maya", "Nobody"])
)
async def test_the_profile_never_exceeds_its_budget(uni: Uniko, budget: int, name: str) -> None:
    bundle = await uni.agent("a").profile(name, budget)
    assert bundle.total_tokens <= budget
    assert default_token_counter().count(bundle.render()) <= budget
    assert default_token_counter().count(bundle.render(header=False)) <= budget


async def test_bad_arguments_get_a_clear_error(uni: Uniko) -> None:
    agent = uni.agent("a")
    with pytest.raises(ValidationError, match="name"):
        await agent.profile("  ")
    with pytest.raises(ValidationError, match="max_tokens"):
        await agent.profile("Maya", 0)
