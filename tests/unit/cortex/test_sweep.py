"""The sweep cadence, a failing step that does not stop the others, and abstractive summaries."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from tests.unit.consolidation._support import AGENT, T0, new_kb
from uniko_memory.config import UnikoConfig
from uniko_memory.cortex import SweepGate, run_sweep, summarize_session
from uniko_memory.model import Message, Summary, make_id
from uniko_memory.providers.chat import LangChainChat


def test_gate_needs_n_cycles_and_the_minimum_interval() -> None:
    now = [0.0]
    cfg = UnikoConfig.build(
        {"pipeline": {"cortex_cycle_every_n_consolidations": 2, "cortex_min_interval_secs": 100}}
    )
    gate = SweepGate(cfg, clock=lambda: now[0])
    assert [gate.note_cycle("a") for _ in range(2)] == [False, True]
    now[0] = 50
    assert [gate.note_cycle("a") for _ in range(3)] == [False, False, False]  # too soon
    now[0] = 150
    assert gate.note_cycle("a") is True  # enough cycles have piled up meanwhile
    assert gate.note_cycle("b") is False  # per agent


async def test_a_failing_step_is_logged_and_the_rest_still_run() -> None:
    kb = await new_kb()
    try:

        async def broken() -> list[str]:
            raise RuntimeError("sessions broke (injected)")

        report = await run_sweep(kb.store, kb.config, kb.embedder, AGENT, maintain_sessions=broken)
        assert "sessions" in report.errors and report.topics is not None and report.procedures is not None
    finally:
        await kb.close()


async def test_abstractive_session_summary_from_a_chat_model() -> None:
    kb = await new_kb()
    try:
        sid = make_id("ses", AGENT, "s1")
        async with kb.store.unit(AGENT) as u:
            for i, text in enumerate(["I adopted a cat named Oliver.", "Lovely! What colour is he?"]):
                u.put(
                    Message(
                        id=f"msg_{i}",
                        agent=AGENT,
                        external_id=str(i),
                        session_id=sid,
                        sender_id="par_x",
                        sender_name="Caroline" if i == 0 else "Melanie",
                        content=text,
                        timestamp=T0,
                        seq=i,
                    )
                )
        chat = LangChainChat(FakeListChatModel(responses=["Caroline adopted a cat, Oliver."]))
        s = await summarize_session(kb.store, AGENT, sid, chat)
        assert isinstance(s, Summary) and s.method == "abstractive" and "Oliver" in s.text
        stored: Any = await kb.store.get(AGENT, s.id)
        assert stored.text == s.text and s.id != make_id("sum", AGENT, sid)  # beside the extractive one

        class Down(FakeListChatModel):
            async def _agenerate(self, *a: Any, **k: Any) -> Any:
                raise RuntimeError("down")

        assert await summarize_session(kb.store, AGENT, sid, LangChainChat(Down(responses=["x"]))) is None
    finally:
        await kb.close()
