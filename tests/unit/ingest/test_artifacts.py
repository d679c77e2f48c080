"""Artifact ingest: documents become an Artifact, its content-addressed bytes and its Chunks.

Fixtures are built in the tests: a text file, Markdown, an HTML page with script and style, a real
PDF written by hand (a few objects and an xref table; pypdf extracts its text), a corrupt PDF.
"""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from uniko_memory import cli
from uniko_memory.errors import IdConflict, MissingDependency, ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest.artifacts import ArtifactIngest, extract
from uniko_memory.model import Artifact, Chunk, EdgeType, Session, Tier, content_hash, session_id
from uniko_memory.model.visibility import Viewer, private

from ._support import FakeEmbedder, edges, nodes, open_uni

AGENT = "docs"
AWS = "AKIAIOSFODNN7EXAMPLE"
ALL_PHASES = {"phases": {"phase1_coverage_gate": 1.0, "phase2_coverage_gate": 1.0}}

REFUNDS = (
    "Refunds are processed within fourteen days of the request. "
    "The customer receives an email once the refund has been issued by the billing team. "
    "Store credit is offered when the original card has expired."
)
TEXT = f"{REFUNDS}\n\n" + " ".join(
    f"The warehouse in district {i} ships parcels on weekday {i % 5} to nearby towns." for i in range(40)
)
MARKDOWN = """# Travel handbook

Intro paragraph about the handbook for employees who travel for work and need to book flights.

## Flights

Book economy class for flights under six hours. Business class needs the approval of a director.
Flights are booked through the travel desk at least two weeks before departure whenever possible.

```
# not a heading inside a code fence
```

## Hotels

Hotels are reimbursed up to 180 euros a night in capital cities and 120 euros elsewhere in Europe.
Receipts must be uploaded within thirty days of the end of the trip to be reimbursed at all.
"""
HTML = """<!DOCTYPE html>
<html><head><title>Pottery  class
 schedule</title>
<style>.hidden { display: none } body { color: red }</style>
<script>var stolen = "document.cookie"; alert("xss payload");</script>
</head><body>
<h1>Pottery class</h1>
<p>The pottery class meets on <b>Saturday mornings</b> at the community centre near the river.
Bring an apron and old clothes because the clay gets everywhere.</p>
<noscript>Enable JavaScript please</noscript>
<ul><li>Wheel throwing</li><li>Glazing &amp; firing</li></ul>
<h2>Teacher</h2>
<p>The teacher is Melanie, who has been making bowls and vases for twenty years in Lisbon.</p>
</body></html>
"""


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def make_pdf(pages: Sequence[Sequence[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF: one Helvetica text object per page, one line per string."""
    objects: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects[2] = f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    for i, lines in enumerate(pages):
        body = " T* ".join(f"{_pdf_string(line)} Tj" for line in lines)
        stream = f"BT /F1 11 Tf 14 TL 72 720 Td {body} ET".encode("latin-1")
        objects[4 + 2 * i] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        ).encode()
        objects[5 + 2 * i] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    info = None
    if title:
        info = 4 + 2 * len(pages)
        objects[info] = f"<< /Title {_pdf_string(title)} >>".encode("latin-1")
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for k in sorted(objects):
        offsets[k] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (k, objects[k])
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[k] for k in range(1, size))
    root = f"<< /Size {size} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{root}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


PDF_PAGES = [
    ["Section 1: refunds are processed within 14 days.", "Contact the billing team for help."],
    ["Section 2: parcels ship to Norway and Sweden.", "Tracking numbers arrive by email."],
]


async def _chunks(uni: Uniko, ids: Sequence[str]) -> list[Chunk]:
    found = await uni.kb.store.get_many(AGENT, list(ids))
    return [c for c in (found[i] for i in ids) if isinstance(c, Chunk)]


async def _count(uni: Uniko) -> dict[str, int]:
    return await uni.agent(AGENT).stats()


# ---------------------------------------------------------------------------------- formats
async def test_text_file_becomes_artifact_blob_and_searchable_chunks(uni: Uniko, tmp_path: Path) -> None:
    path = tmp_path / "refund-policy.txt"
    path.write_text(TEXT, encoding="utf-8")
    report = await uni.agent(AGENT).ingest_artifact(path)

    data = path.read_bytes()
    assert report.sha256 == content_hash(data) and report.size == len(data)
    assert report.artifact_id == f"sha256:{report.sha256}" and report.mime_type == "text/plain"
    assert report.title == "refund-policy" and report.bytes_stored and not report.extraction_failed
    assert report.chunks >= 2 and report.embedded == report.chunks

    art = await uni.kb.store.get(AGENT, report.artifact_node_id)
    assert isinstance(art, Artifact) and art.sha256 == report.sha256 and art.source_path == str(path)
    assert await uni.kb.store.get_blob(report.sha256) == data

    chunks = await _chunks(uni, report.chunk_node_ids)
    assert [c.index for c in chunks] == list(range(report.chunks))
    assert {c.chunk_type for c in chunks} == {"artifact"}
    assert all(c.parent_id == art.id and c.parent_tier == Tier.ARTIFACT for c in chunks)
    assert all(TEXT[c.start : c.end] == c.text for c in chunks)
    assert chunks[0].text.startswith("Refunds are processed")

    out = await edges(uni, AGENT, [art.id])
    assert {(e.type, e.dst) for e in out if e.type == EdgeType.HAS_CHUNK} == {
        (EdgeType.HAS_CHUNK, c) for c in report.chunk_node_ids
    }
    assert [e.dst for e in out if e.type == EdgeType.HAS_CONTENT] == [f"blob:{report.sha256}"]

    vectors = await uni.kb.store.get_vectors(AGENT, [*report.chunk_node_ids, art.id])
    assert set(vectors) == {*report.chunk_node_ids, art.id}  # chunks, and the artifact's mean


async def test_markdown_splits_at_headings_outside_code_fences(uni: Uniko) -> None:
    report = await uni.agent(AGENT).ingest_artifact(MARKDOWN.encode(), mime_type="text/markdown")
    assert report.title == "Travel handbook"
    chunks = await _chunks(uni, report.chunk_node_ids)
    # the intro (under the 32-token minimum) joins the next part; no chunk straddles two headings
    assert [c.heading for c in chunks] == ["Travel handbook", "Hotels"]
    assert "## Flights" in chunks[0].text and "Hotels" not in chunks[0].text
    assert chunks[1].text.startswith("## Hotels")
    assert "# not a heading inside a code fence" in chunks[0].text


async def test_html_drops_script_and_style_and_keeps_blocks() -> None:
    ex = extract(HTML.encode(), "text/html", min_tokens=1)
    assert ex.title == "Pottery class schedule" and not ex.failed
    text = "".join(s.text for s in ex.sections)
    for hidden in ("stolen", "xss", "display", "color", "Enable JavaScript"):
        assert hidden not in text
    assert [s.text.splitlines()[0] for s in ex.sections] == ["# Pottery class", "## Teacher"]
    assert "Saturday mornings at the community centre" in text
    assert "- Wheel throwing\n- Glazing & firing" in text


async def test_html_through_the_facade(uni: Uniko, tmp_path: Path) -> None:
    path = tmp_path / "pottery.html"
    path.write_text(HTML, encoding="utf-8")
    report = await uni.agent(AGENT).ingest_artifact(path, title="Pottery")
    assert report.mime_type == "text/html" and report.title == "Pottery"
    text = " ".join(c.text for c in await _chunks(uni, report.chunk_node_ids))
    assert "Melanie" in text and "alert" not in text


async def test_pdf_pages_become_page_chunks(uni: Uniko, tmp_path: Path) -> None:
    path = tmp_path / "policy.pdf"
    path.write_bytes(make_pdf(PDF_PAGES, title="Shop policy"))
    report = await uni.agent(AGENT).ingest_artifact(path, external_id="policy-v1")
    assert report.mime_type == "application/pdf" and report.page_count == 2
    assert report.title == "Shop policy" and report.artifact_id == "policy-v1"
    assert not report.extraction_failed and report.chunks == 2
    chunks = await _chunks(uni, report.chunk_node_ids)
    assert [(c.chunk_type, c.metadata["page"]) for c in chunks] == [("page", 1), ("page", 2)]
    assert "refunds are processed within 14 days" in chunks[0].text
    assert "Norway" in chunks[1].text
    art = await uni.kb.store.get(AGENT, report.artifact_node_id)
    assert isinstance(art, Artifact) and art.page_count == 2


# ---------------------------------------------------------------------------------- failures
@pytest.mark.parametrize(
    ("data", "mime", "why"),
    [
        (b"%PDF-1.4\n1 0 obj garbage", "application/pdf", "unreadable PDF"),
        (b"caf\xe9 au lait costs 3 euros", "text/plain", "not UTF-8"),
    ],
)
async def test_extraction_failure_keeps_the_artifact(uni: Uniko, data: bytes, mime: str, why: str) -> None:
    report = await uni.agent(AGENT).ingest_artifact(data, mime_type=mime)
    assert report.extraction_failed and why in (report.extraction_error or "")
    assert report.chunks == 0 and report.bytes_stored
    art = await uni.kb.store.get(AGENT, report.artifact_node_id)
    assert (
        isinstance(art, Artifact)
        and art.extraction_failed
        and art.extraction_error == report.extraction_error
    )
    assert await uni.kb.store.get_blob(report.sha256) == data


async def test_encrypted_pdf_is_stored_and_reported(uni: Uniko) -> None:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="hunter2", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    report = await uni.agent(AGENT).ingest_artifact(buf.getvalue(), external_id="locked")
    assert report.extraction_failed and "encrypted" in (report.extraction_error or "")
    assert await uni.kb.store.get(AGENT, report.artifact_node_id) is not None


async def test_without_pypdf_a_pdf_names_the_extra(uni: Uniko, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(MissingDependency, match=r"uniko-memory\[pdf\]"):
        await uni.agent(AGENT).ingest_artifact(make_pdf(PDF_PAGES))
    assert await _count(uni) == {}


async def test_bad_input_is_refused_before_anything_is_stored(uni: Uniko, tmp_path: Path) -> None:
    agent = uni.agent(AGENT)
    with pytest.raises(ValidationError, match=r"text/plain, text/markdown, text/html, application/pdf"):
        await agent.ingest_artifact(b"x,y\n1,2", mime_type="text/csv")
    docx = tmp_path / "report.docx"
    docx.write_bytes(b"PK\x03\x04")
    with pytest.raises(ValidationError, match=r"'\.docx'.*\.md"):
        await agent.ingest_artifact(docx)
    with pytest.raises(ValidationError, match="cannot read"):
        await agent.ingest_artifact(tmp_path / "missing.txt")
    with pytest.raises(ValidationError, match="empty"):
        await agent.ingest_artifact(b"")
    assert await _count(uni) == {}


async def test_size_limit() -> None:
    uni = await open_uni({"ingest": {"max_artifact_bytes": 100}})
    try:
        with pytest.raises(ValidationError, match=r"max_artifact_bytes"):
            await uni.agent(AGENT).ingest_artifact(b"x" * 101)
        assert (await uni.agent(AGENT).ingest_artifact(b"y" * 100)).size == 100
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- identity
async def test_reingest_is_a_noop_and_ids_conflict_like_turns(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    first = await agent.ingest_artifact(TEXT.encode())
    before = await _count(uni)
    again = await agent.ingest_artifact(TEXT.encode(), title="ignored on a replay")
    assert again.was_replay and not first.was_replay
    assert again.artifact_node_id == first.artifact_node_id
    assert again.chunk_node_ids == first.chunk_node_ids and again.embedded == 0
    assert again.title == first.title and again.bytes_stored
    assert await _count(uni) == before

    # the caller's id is the identity: the same bytes under a new id are a second artifact
    named = await agent.ingest_artifact(TEXT.encode(), external_id="handbook")
    assert named.artifact_node_id != first.artifact_node_id and not named.was_replay
    assert (await agent.ingest_artifact(TEXT.encode(), external_id="handbook")).was_replay
    with pytest.raises(IdConflict, match="handbook"):
        await agent.ingest_artifact(b"A different document entirely.", external_id="handbook")
    assert await _count(uni) == {**before, "artifact": 2, "chunk": 2 * before["chunk"]}


async def test_concurrent_ingests_of_one_document_store_it_once(uni: Uniko, tmp_path: Path) -> None:
    path = tmp_path / "README"  # no suffix: the bytes are sniffed (plain text)
    path.write_text(TEXT, encoding="utf-8")
    agent = uni.agent(AGENT)
    a, b = await asyncio.gather(agent.ingest_artifact(path), agent.ingest_artifact(path))
    assert a.artifact_node_id == b.artifact_node_id and a.chunk_node_ids == b.chunk_node_ids
    assert a.mime_type == "text/plain" and sorted([a.was_replay, b.was_replay]) == [False, True]
    assert (await _count(uni))["artifact"] == 1


async def test_commit_first_then_embed(uni: Uniko) -> None:
    ing = ArtifactIngest(uni.kb.store, uni.config, uni.kb.embedder)
    report = await ing.ingest(AGENT, TEXT.encode(), embed=False)
    assert report.embedded == 0
    assert await uni.kb.store.get_vectors(AGENT, report.chunk_node_ids) == {}
    hits = await uni.kb.store.text_search(AGENT, Tier.CHUNK, "refunds billing team", k=3)
    assert hits and hits[0].id == report.chunk_node_ids[0]  # BM25 at commit
    # a replay embeds what is missing
    replay = await uni.agent(AGENT).ingest_artifact(TEXT.encode())
    assert replay.was_replay and replay.embedded == report.chunks
    assert set(await uni.kb.store.get_vectors(AGENT, report.chunk_node_ids)) == set(report.chunk_node_ids)


async def test_embedder_failure_is_reported_not_raised() -> None:
    class Down(FakeEmbedder):
        async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("provider down")

    uni = await open_uni(embedder=Down())
    try:
        report = await uni.agent(AGENT).ingest_artifact(TEXT.encode())
        assert report.embedded == 0 and "provider down" in (report.embedding_error or "")
        assert report.chunks and await uni.kb.store.get(AGENT, report.artifact_node_id) is not None
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- secrets
class Capturing(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return await super().embed_documents(texts)


SECRET_DOC = f"# Deploy notes {AWS}\n\n{REFUNDS} The deploy key is {AWS} and must never be shared.\n"


async def test_secrets_are_masked_and_the_raw_bytes_withheld() -> None:
    embedder = Capturing()
    uni = await open_uni(embedder=embedder)
    try:
        report = await uni.agent(AGENT).ingest_artifact(SECRET_DOC.encode(), mime_type="text/markdown")
        assert report.secrets_redacted == 3 and not report.bytes_stored  # title, heading, body
        assert AWS not in report.title and "[REDACTED:aws_access_key]" in report.title
        chunks = await _chunks(uni, report.chunk_node_ids)
        assert chunks and all(AWS not in c.text for c in chunks)
        assert "[REDACTED:aws_access_key]" in chunks[0].text
        assert embedder.seen and all(AWS not in t for t in embedder.seen)
        assert await uni.kb.store.get_blob(report.sha256) is None
        assert not [e for e in await edges(uni, AGENT, [report.artifact_node_id], EdgeType.HAS_CONTENT)]
        art = await uni.kb.store.get(AGENT, report.artifact_node_id)
        assert isinstance(art, Artifact) and art.sha256 == report.sha256 and AWS not in art.title
        # undecodable text is scanned as Latin-1 before its bytes are kept
        latin = await uni.agent(AGENT).ingest_artifact(
            f"cl\xe9 {AWS}".encode("latin-1"), mime_type="text/plain"
        )
        assert latin.extraction_failed and not latin.bytes_stored
    finally:
        await uni.close()


async def test_config_may_keep_the_raw_bytes() -> None:
    uni = await open_uni({"ingest": {"store_artifact_bytes_with_secrets": True}})
    try:
        report = await uni.agent(AGENT).ingest_artifact(SECRET_DOC.encode(), mime_type="text/markdown")
        assert report.secrets_redacted == 3 and report.bytes_stored
        assert await uni.kb.store.get_blob(report.sha256) == SECRET_DOC.encode()
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- recall
async def test_recall_phase3_returns_artifact_chunks_with_artifact_sources(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    pdf = await agent.ingest_artifact(make_pdf(PDF_PAGES), external_id="policy")
    bundle = await agent.recall("How many days until refunds are processed?", **ALL_PHASES)
    found = [i for i in bundle.items if i.node_id in pdf.chunk_node_ids]
    assert found, [i.content for i in bundle.items]
    src = found[0].sources[0]
    assert (src.kind, src.artifact_id, src.chunk_id) == ("artifact", pdf.artifact_node_id, found[0].node_id)
    assert "(artifact chunk)" in bundle.render()


async def test_visibility_and_session_scope(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    secret = await agent.ingest_artifact(
        make_pdf(PDF_PAGES), external_id="policy", session="onboarding", visibility=private("p1")
    )
    sid = session_id(AGENT, "onboarding")
    session = await uni.kb.store.get(AGENT, sid)
    assert isinstance(session, Session)  # created on first use, as a turn would
    assert [e.dst for e in await edges(uni, AGENT, [secret.artifact_node_id], EdgeType.ATTACHED_TO)] == [sid]
    chunks = await _chunks(uni, secret.chunk_node_ids)
    assert all(c.visibility == "private:p1" and c.session_id == sid for c in chunks)

    q = "How many days until refunds are processed?"

    def ids(bundle: object) -> set[str]:
        return {i.node_id for i in getattr(bundle, "items", [])}

    assert not ids(await agent.recall(q, viewer=Viewer(participant_id="p2"), **ALL_PHASES)) & set(
        secret.chunk_node_ids
    )
    owner = ids(await agent.recall(q, viewer=Viewer(participant_id="p1"), **ALL_PHASES))
    assert owner & set(secret.chunk_node_ids)
    scoped = ids(await agent.recall(q, sessions=["onboarding"], **ALL_PHASES))
    assert scoped & set(secret.chunk_node_ids)
    assert not ids(await agent.recall(q, sessions=["elsewhere"], **ALL_PHASES)) & set(secret.chunk_node_ids)


# ---------------------------------------------------------------------------------- sync + CLI
def test_sync_twin() -> None:
    uni = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:
        report = uni.agent(AGENT).ingest_artifact_sync(MARKDOWN.encode(), mime_type="text/markdown")
        assert report.chunks == 2 and not report.was_replay
    finally:
        uni.close_sync()


def test_cli_ingest_doc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("uniko_memory.providers.defaults.default_embedder", lambda cfg: FakeEmbedder())
    doc, bad, db = tmp_path / "notes.md", tmp_path / "broken.pdf", tmp_path / "m.db"
    doc.write_text(MARKDOWN, encoding="utf-8")
    bad.write_bytes(b"%PDF-1.4 broken")
    assert cli.main(["ingest-doc", str(doc), "--agent", "me", "--path", str(db)]) == 0
    out = capsys.readouterr().out
    assert "2 chunks" in out and "artifact" in out
    assert cli.main(["ingest-doc", str(doc), str(bad), "--agent", "me", "--path", str(db)]) == 1
    captured = capsys.readouterr()
    assert "already stored" in captured.out and "could not be extracted" in captured.err
    assert cli.main(["ingest-doc", str(tmp_path / "x.docx"), "--agent", "me", "--path", str(db)]) == 2


async def test_short_text_is_one_chunk(uni: Uniko) -> None:
    report = await uni.agent(AGENT).ingest_artifact(b"Just one short line of text about tea.")
    arts = await nodes(uni, AGENT, Tier.ARTIFACT)
    assert len(arts) == 1 and isinstance(arts[0], Artifact) and arts[0].mime_type == "text/plain"
    assert report.chunks == 1 and report.title == ""
