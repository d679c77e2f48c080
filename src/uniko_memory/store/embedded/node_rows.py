"""A node's row: the JSON in ``nodes.data`` leaves out what the row's columns already hold.

``id``, ``agent``, ``visibility`` and ``redacted`` are columns (indexed, filtered on); writing them
again at the head of every node's JSON cost ~100 bytes a node, ~4 % of a store. A row's ``data``
is therefore either the node's whole JSON (rows written before, or a node whose JSON does not start
the usual way) or that JSON less its head, which ``full_json`` puts back from the columns.
"""

from __future__ import annotations

import json

from pydantic_core import to_json

from ...model import Node

#: The head every whole node JSON starts with (pydantic writes the base fields first).
_WHOLE = '{"id":'


def _head(node_id: str, agent: str, visibility: str, redacted: bool) -> str:
    return (
        f'{{"id":{to_json(node_id).decode()},"agent":{to_json(agent).decode()},'
        f'"visibility":{to_json(visibility).decode()},"redacted":{"true" if redacted else "false"},'
    )


def slim_json(node: Node, data: str) -> str:
    """``data`` (the node's JSON) without the head its columns hold; whole when it differs."""
    head = _head(node.id, node.agent, str(node.visibility), node.redacted)
    if data.startswith(head) and len(data) > len(head) + 1:
        return "{" + data[len(head) :]
    return data


def full_json(data: str, node_id: str, agent: str, visibility: str, redacted: int) -> str:
    """The node's whole JSON from a row."""
    if data.startswith(_WHOLE):
        return data
    return (
        f'{{"id":{json.dumps(node_id)},"agent":{json.dumps(agent)},"visibility":{json.dumps(visibility)},'
        f'"redacted":{"true" if redacted else "false"},{data[1:]}'
    )
