"""How a memory has been used: feedback (echo / fizzle) and reads (access count, last access).

Kept beside the node, not in it: usage changes on the read path and must never rewrite (or
invalidate) the node's content, its vector or the recall cache's view of it. A store keeps one
``NodeUsage`` per node and applies ``UsageDelta`` additively and atomically
(``Store.record_usage``), so concurrent feedback never loses a count.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .time import UtcDatetime


class _UsageCounts(BaseModel):
    """The counters a node's usage and a usage event share (weighted: ``feedback(..., weight=w)``
    counts ``w``)."""

    model_config = ConfigDict(frozen=True)

    #: Times rated useful.
    echo: float = Field(0.0, ge=0.0)
    #: Times rated not useful.
    fizzle: float = Field(0.0, ge=0.0)
    #: Times a recall or wake-up returned it.
    access_count: int = Field(0, ge=0)


class NodeUsage(_UsageCounts):
    """The usage counters of one node (all zero for a node never rated nor read)."""

    last_accessed_at: UtcDatetime | None = None
    #: The lexical share of the last recall that returned it.
    last_lex_share: float | None = Field(None, ge=0.0, le=1.0)

    @property
    def rated(self) -> float:
        return self.echo + self.fizzle


class UsageDelta(_UsageCounts):
    """What one event adds to a node's usage (counts add; the last-access time only moves forward)."""

    accessed_at: UtcDatetime | None = None
    lex_share: float | None = Field(None, ge=0.0, le=1.0)

    def applied_to(self, usage: NodeUsage | None) -> NodeUsage:
        u = usage or NodeUsage()
        last = u.last_accessed_at
        if self.accessed_at is not None and (last is None or self.accessed_at > last):
            last = self.accessed_at
        return NodeUsage(
            echo=u.echo + self.echo,
            fizzle=u.fizzle + self.fizzle,
            access_count=u.access_count + self.access_count,
            last_accessed_at=last,
            last_lex_share=self.lex_share if self.lex_share is not None else u.last_lex_share,
        )
