"""Memory as a service: the MCP server (``uniko mcp``) and the memory inspector page (``uniko inspect``).

Both need the ``mcp`` extra (``pip install 'uniko-memory[mcp]'``: the MCP SDK, which brings starlette
and uvicorn); the modules that import them do so lazily and raise ``MissingDependency`` naming it.
``tools`` holds the MCP tool table (one entry per tool, each run against one ``Agent``), ``mcp_server``
builds the SDK server from it, ``auth`` maps bearer tokens to agents, ``sessions`` keeps each token to
its quota of MCP sessions, ``http`` serves over HTTP.
"""

from __future__ import annotations

from .auth import TokenMap, is_loopback
from .tools import TOOLS, ToolOutput, ToolSpec, available_tools

__all__ = ["TOOLS", "TokenMap", "ToolOutput", "ToolSpec", "available_tools", "is_loopback"]
