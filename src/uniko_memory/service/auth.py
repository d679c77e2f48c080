"""Bearer tokens for the HTTP server: each token opens exactly one agent's memory.

A ``TokenMap`` is the server's table of tokens (one token for the configured agent, or a JSON file
``{"token": "agent", ...}`` for several tenants). It is the SDK's ``TokenVerifier``: a request whose
``Authorization: Bearer`` token is not in the table is refused with 401 before any tool runs, and
the token's agent is the one every tool of that request works on.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError

#: Shortest token accepted (a guessable token is no protection).
MIN_TOKEN_CHARS = 16


def canonical_host(host: str) -> str:
    """``host`` in one spelling, so every way of writing an address is judged as what it names.

    An IP address comes back in its compressed form without brackets (``[::1]`` and
    ``0:0:0:0:0:0:0:1`` are ``::1``), a name in lower case (``LOCALHOST`` is ``localhost``).
    """
    bare = host.strip()
    if bare.startswith("[") and bare.endswith("]"):
        bare = bare[1:-1]
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare.lower()


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost), in any spelling."""
    name = canonical_host(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class TokenMap:
    """Token -> agent id; ``verify_token`` implements the MCP SDK's ``TokenVerifier``."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise ConfigError("no bearer token given")
        for token, agent in tokens.items():
            if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS:
                raise ConfigError(f"a bearer token must be a string of at least {MIN_TOKEN_CHARS} characters")
            if not isinstance(agent, str) or not agent.strip():
                raise ConfigError("each bearer token must map to a non-empty agent id")
        self._tokens = dict(tokens)

    @classmethod
    def from_file(cls, path: Path) -> TokenMap:
        """A JSON object ``{"token": "agent id", ...}``."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the tokens file {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"the tokens file {path} is not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f'the tokens file {path} must hold a JSON object {{"token": "agent id"}}')
        return cls(raw)

    @property
    def count(self) -> int:
        """How many tokens the table holds."""
        return len(self._tokens)

    @property
    def agents(self) -> set[str]:
        return set(self._tokens.values())

    def agent_for(self, token: str) -> str | None:
        """The agent of ``token`` (compared in constant time), or None."""
        found = None
        for known, agent in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = agent
        return found

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        agent = self.agent_for(token)
        if agent is None:
            return None
        return AccessToken(token=token, client_id=agent, subject=agent, scopes=[])
