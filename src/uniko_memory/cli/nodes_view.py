"""How the look-inside commands describe a node: a one-line text, its time, its JSON."""

from __future__ import annotations

from typing import Any

from ..model import Node

#: Attributes tried, in order, for a node's one-line text when it has no search text.
_LABEL_FIELDS = ("content", "text", "name", "title", "external_id", "action_type", "step")


def node_text(node: Node) -> str:
    if node.redacted:
        return "[redacted]"
    text = node.search_text()
    if text:
        return text
    for name in _LABEL_FIELDS:
        value = getattr(node, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def node_time(node: Node) -> str:
    when = node.time_key()
    return f"{when:%Y-%m-%d %H:%M}" if when is not None and hasattr(when, "strftime") else ""


def node_json(node: Node) -> dict[str, Any]:
    return {"tier": node.tier.value, **node.model_dump(mode="json")}
