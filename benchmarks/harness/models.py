"""Chat models for the LLM stage from a ``provider:model`` spec (``--judge-model openai:gpt-4o-mini``).

The three providers below are built directly (``langchain_openai.ChatOpenAI``, ``langchain_anthropic.ChatAnthropic``,
``langchain_cohere.ChatCohere``), imported only when asked for; a missing package or API key is reported up front,
naming the package to install and the environment variable to set. Any other provider goes through
``langchain.chat_models.init_chat_model`` when the ``langchain`` package is installed. Models are built with
temperature 0 so repeated runs grade alike. Building a model opens no connection; the first call does.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any


class ModelSpecError(ValueError):
    """A model spec is malformed, or its provider package or API key is missing; the message says what to do."""


@dataclass(frozen=True)
class Provider:
    module: str
    cls: str
    package: str
    env: str


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("langchain_openai", "ChatOpenAI", "langchain-openai", "OPENAI_API_KEY"),
    "anthropic": Provider("langchain_anthropic", "ChatAnthropic", "langchain-anthropic", "ANTHROPIC_API_KEY"),
    "cohere": Provider("langchain_cohere", "ChatCohere", "langchain-cohere", "COHERE_API_KEY"),
}


def parse_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` → ``("openai", "gpt-4o-mini")``; the model name may contain further colons."""
    provider, sep, model = spec.strip().partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if not sep or not provider or not model:
        raise ModelSpecError(
            f"model spec {spec!r} must be PROVIDER:MODEL, e.g. openai:gpt-4o-mini, "
            f"anthropic:claude-3-5-haiku-latest or cohere:command-r (known providers: {', '.join(sorted(PROVIDERS))})"
        )
    return provider, model


def build_chat_model(spec: str, **kwargs: Any) -> Any:
    """A LangChain chat model for ``spec``; ``ModelSpecError`` saying what is missing otherwise."""
    provider, model = parse_spec(spec)
    kwargs.setdefault("temperature", 0)
    known = PROVIDERS.get(provider)
    if known is not None:
        return _build_known(spec, known, model, kwargs)
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise ModelSpecError(
            f"model spec {spec!r}: unknown provider {provider!r}. Built in: {', '.join(sorted(PROVIDERS))}; "
            "for other providers install the 'langchain' package (its init_chat_model) and the provider's "
            "langchain integration"
        ) from None
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except (ImportError, ValueError) as exc:
        raise ModelSpecError(f"model spec {spec!r}: {exc}") from None


def _build_known(spec: str, p: Provider, model: str, kwargs: dict[str, Any]) -> Any:
    problems: list[str] = []
    module: Any = None
    try:
        module = importlib.import_module(p.module)
    except ImportError:
        problems.append(f"the package {p.package} (pip install {p.package})")
    if not os.environ.get(p.env):
        problems.append(f"the environment variable {p.env} (your API key)")
    if problems:
        raise ModelSpecError(f"model {spec!r} needs " + " and ".join(problems))
    try:
        return getattr(module, p.cls)(model=model, **kwargs)
    except Exception as exc:  # e.g. a validation error of the provider's client
        raise ModelSpecError(f"model {spec!r}: {p.package}.{p.cls} could not be built: {exc}") from None
