"""Smoke test of the built packages, run by the Python of a fresh virtual environment.

``tests/integration/test_install.py`` builds the four wheels (``make dist``), installs them into a
new venv and runs this file there, outside the checkout, so every import comes from the wheels:
the core (import, ingest with the offline default models, recall), the ``uniko`` command, the
LangChain retriever and the LlamaIndex retriever and memory block. It prints one ``ok ...`` line a
step and exits non-zero at the first failure.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def main() -> int:
    import uniko_memory
    from uniko_memory import Turn, Uniko

    here = Path(uniko_memory.__file__).resolve()
    if "site-packages" not in here.parts:
        print(f"uniko_memory was imported from {here}, not from an installed wheel", file=sys.stderr)
        return 1
    print(f"ok import uniko_memory {uniko_memory.__version__}")

    with tempfile.TemporaryDirectory() as tmp:
        uni = Uniko.open_sync(Path(tmp) / "smoke.db")
        try:
            agent = uni.agent("smoke")
            session = agent.session("s1")
            session.observe_sync(
                Turn(sender="Priya", content="I adopted a grey cat named Biscuit.", addressed_to="Tomas")
            )
            session.observe_sync(
                Turn(sender="Tomas", content="I started a new job at the bakery on Elm Street.")
            )
            session.finalize_sync()
            print("ok ingest")
            bundle = agent.recall_sync("What is the name of Priya's cat?", token_budget=300)
            if "Biscuit" not in bundle.render():
                print(f"recall did not find the cat:\n{bundle.render()}", file=sys.stderr)
                return 1
            print("ok recall")

            from langchain_uniko import UnikoRetriever as LangChainRetriever

            docs = LangChainRetriever(agent=agent).invoke("Where does Tomas work?")
            if not any("bakery" in d.page_content for d in docs):
                print(f"LangChain retriever missed the bakery: {docs}", file=sys.stderr)
                return 1
            print("ok langchain retriever")

            from llama_index.memory.uniko import UnikoMemoryBlock
            from llama_index.retrievers.uniko import UnikoRetriever as LlamaRetriever

            nodes = LlamaRetriever(agent).retrieve("What is the name of Priya's cat?")
            if not any("Biscuit" in n.node.get_content() for n in nodes):
                print(f"LlamaIndex retriever missed the cat: {nodes}", file=sys.stderr)
                return 1
            print("ok llamaindex retriever")
            print(f"ok llamaindex memory block {UnikoMemoryBlock.__name__}")
        finally:
            uni.close_sync()

    from uniko_memory.cli import main as cli_main

    with tempfile.TemporaryDirectory() as tmp:
        if cli_main(["demo", "--path", str(Path(tmp) / "demo.db")]) != 0:
            return 1
    print("ok uniko demo")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
