"""The user-facing API: ``Uniko`` → ``Agent`` → ``Session``.

One async core. Every async verb has a ``*_sync`` twin that runs it on the engine's event loop:
``Uniko.open_sync`` starts that loop in one background thread; ``await Uniko.open`` uses the
caller's loop. Async calls made from another loop are forwarded to the engine loop, so a handle
can be shared between threads; a ``*_sync`` call from inside the engine loop itself is refused
with a clear error (it would deadlock).

The facade is a thin face: the backend is chosen by ``KnowledgeBase.from_config``, the
orchestration lives in ``pipeline`` (``PipelineSystem``, ``Cycles``, ``Forgetting``), answers in
``query``, and the default models in ``providers``.
"""

from ..query import answer_prompt
from .agent import Agent
from .loop import EngineLoop
from .session import Session, UnitBuilder
from .uniko import Uniko

__all__ = ["Agent", "EngineLoop", "Session", "Uniko", "UnitBuilder", "answer_prompt"]
