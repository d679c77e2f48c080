"""Who may see a node.

A node's ``visibility`` is ``public`` (or empty), ``private:{participant}``, ``team:{id}`` or
``org:{id}``. Any other value admits nobody: an unknown scheme fails closed rather than leaking.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PUBLIC = "public"
_SCHEMES = ("private", "team", "org")


def is_well_formed(visibility: str) -> bool:
    if visibility in ("", PUBLIC):
        return True
    scheme, sep, ident = visibility.partition(":")
    return bool(sep) and scheme in _SCHEMES and bool(ident.strip())


class Viewer(BaseModel):
    """The participant a recall is served to, with the teams and orgs it belongs to."""

    model_config = ConfigDict(frozen=True)

    participant_id: str
    teams: frozenset[str] = Field(default_factory=frozenset)
    orgs: frozenset[str] = Field(default_factory=frozenset)

    def admitted_values(self) -> frozenset[str]:
        """Every visibility value this viewer may see: the set a store filter pushes down."""
        values = {PUBLIC, "", f"private:{self.participant_id}"}
        values.update(f"team:{t}" for t in self.teams)
        values.update(f"org:{o}" for o in self.orgs)
        return frozenset(values)

    def admits(self, visibility: str | None) -> bool:
        return (visibility or "") in self.admitted_values()


#: Who may see what was learnt from sources of different non-public scopes: only the agent itself
#: (its own participant, ``@agent``). No viewer value admits a union of scopes, so it fails closed.
AGENT_ONLY = "private:@agent"


def merged_visibility(current: str | None, source: str | None) -> str:
    """The visibility of a node known from two sources (an entity named in several turns).

    Public as soon as one source is public (the name was said openly); the shared scope when both
    have the same one; else ``AGENT_ONLY``, never wider than any source.
    """
    a, b = current or PUBLIC, source or PUBLIC
    if PUBLIC in (a, b):
        return PUBLIC
    return a if a == b else AGENT_ONLY


def private(participant: str) -> str:
    return f"private:{participant}"


def team(team_id: str) -> str:
    return f"team:{team_id}"


def org(org_id: str) -> str:
    return f"org:{org_id}"
