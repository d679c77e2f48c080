"""The fallback sentence of a Fact without an Observation's sentence: never a bare lemma."""

from __future__ import annotations

import pytest

from uniko_memory.model.statement import tensed_statement, third_person


@pytest.mark.parametrize(
    ("triple", "expected"),
    [
        (("Priya", "adopt", "grey cat"), "Priya adopts grey cat"),
        (("Priya's weekends", "be", "busy"), "Priya's weekends are busy"),
        (("Caroline", "be", "to go do some research"), "Caroline is to go do some research"),
        (("Jon", "try", "hard"), "Jon tries hard"),
        (("Tomas", "watch", "TV"), "Tomas watches TV"),
        (("Melanie", "go_to", "the park"), "Melanie goes to the park"),
        (("Caroline", "not_be", "sure"), "Caroline is not sure"),
        (("Caroline", "not_like", "jazz"), "Caroline does not like jazz"),
        (("the kids", "not_like", "jazz"), "the kids do not like jazz"),
        (("Caroline", "would_go_through", "fields"), "Caroline would go through fields"),
        (("Anna and Tom", "have", "a dog"), "Anna and Tom have a dog"),
        (("the class", "be", "fun"), "the class is fun"),
        (("pets", "be_awesome_for", "joy"), "pets are awesome for joy"),
        (("Melanie", "love", ""), "Melanie loves"),
    ],
)
def test_tensed_statement(triple: tuple[str, str, str], expected: str) -> None:
    assert tensed_statement(*triple) == expected


def test_third_person() -> None:
    assert [third_person(v) for v in ("be", "have", "do", "go", "fix", "play", "carry")] == [
        "is", "has", "does", "goes", "fixes", "plays", "carries",
    ]  # fmt: skip
    assert third_person("be", plural=True) == "are"
