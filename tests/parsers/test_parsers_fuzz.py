"""Every reader over mutated files: the only outcome allowed is documents or per-file errors.

Hypothesis starts from a small valid sample of every supported format and mutates it: bytes
flipped, cut, duplicated or spliced with tokens that matter to some parser (YAML aliases and
nesting, impossible dates, deep JSON, PDF operators, zip and PDF magic, encoded words, hidden
styles). For the zip formats it also mutates the XML inside the package and re-zips it, so
python-docx and python-pptx see broken markup rather than only a broken zip. ``read_file``
must return, never raise; each error must name the file (``FILE`` or ``FILE:LINE``).
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glassrag import KnowledgeBase
from glassrag.parsers.readers import read_file
from parser_samples import make_docx, make_eml, make_pdf, make_pptx

TOKENS = [
    b"*a", b"&a ", b"[[[[[[[[", b"]]]]", b"2023-02-29", b"<<: *a", b"---\n", b"...\n",
    b'{"a":' * 40, b"}}}}", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\r", b"\n\n", b"\t",
    b"<div>" * 30, b"</div>", b'<p style="display:none" hidden aria-hidden="true">',
    b"<select>", b"<!--", b"<script>", b'="', b"'", b'"', b",", b";",
    b"%PDF-1.4", b"%%EOF", b"BT", b"ET", b"3 Tr", b"1 1 1 rg", b"q", b"Q", b"Tj", b"TJ",
    b"endstream", b"endobj", b"/Kids", b"0 R", b"<<", b">>", b"PK\x03\x04", b"PK\x05\x06",
    b"=?utf-8?b?eHh4?=", b"=?", b"Content-Type: multipart/mixed; boundary=b\n", b"--b\n",
    b"[doc:x]\n", b"[doc:x]\n", b"<w:vanish/>", b"<w:tbl>", b"<w:tr>", b"</w:p>", b"&amp;",
    # Known crash and blow-up shapes: an impossible date, nesting past the recursion limit,
    # an alias ladder, an element with many attributes.
    b"\nwhen: 2023-02-29\n", b"\ndeep: " + b"[" * 1200 + b"\n", b'{"m":' * 1200,
    b"".join(b" " * i + b"k:\n" for i in range(80)),
    b"\nx: &x [1, 2]\ny: &y [*x, *x]\nz: [*y, *y]\n",
    b"<p " + b" ".join(b"a%d" % i for i in range(300)) + b">",
]


@cache
def samples() -> dict[str, bytes]:
    """One small valid file per supported format."""
    with tempfile.TemporaryDirectory() as tmp:
        docx = make_docx(Path(tmp) / "s.docx").read_bytes()
        pptx = make_pptx(Path(tmp) / "s.pptx").read_bytes()
    return {
        "md": b"---\ntitle: Sample\nroles: [employee]\ndate: 2024-02-29\ntags: [a, b]\n---\n"
              b"# Heading\n\nFirst paragraph.\n\n```\n# not a heading\n```\n",
        "txt": b"[doc:one]\nFirst section.\n\n[doc:two]\nSecond section.\n",
        "jsonl": (json.dumps({"doc_id": "a", "text": "Alpha.", "metadata": {"k": [1, {"x": 2}]}})
                  + "\n" + json.dumps({"doc_id": "b", "text": "Beta.", "roles": ["hr"]})
                  + "\n").encode(),
        "pdf": make_pdf([["Page one text.", "@1 1 1 rg", "white"], ["Page two."]], title="T"),
        "docx": docx,
        "pptx": pptx,
        "html": b"<!doctype html><html lang=en><head><title>T</title></head><body><main>"
                b"<h1>Title</h1><p class=a>Para <b>bold</b>.</p><div hidden>h</div>"
                b"<table><tr><td>a</td><td>b</td></tr></table><pre>  x</pre></main></body></html>",
        "eml": make_eml(html="<p>Hi <span style='display:none'>x</span></p>"),
        "csv": b"name,year,summary\nAda,1843,Notes\n\"Alan\",1936,\"On, computable\"\n",
        "tsv": b"name\tyear\nAda\t1843\nAlan\t1936\n",
    }


samples()  # built at import: python-pptx draws ids from `random`, which strategies must not


def _rezip_member(raw: bytes, pick: int, mutate) -> bytes:  # type: ignore[no-untyped-def]
    """``raw`` (a zip) with one member's bytes mutated, every other member as it was."""
    with zipfile.ZipFile(io.BytesIO(raw)) as src:
        infos = src.infolist()
        target = infos[pick % len(infos)].filename
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in infos:
                data = src.read(info)
                dst.writestr(info.filename, mutate(data) if info.filename == target else data)
    return out.getvalue()


_edit = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("cut"), st.integers(0, 10**6), st.integers(1, 64)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("splice"), st.integers(0, 10**6), st.sampled_from(TOKENS)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("repeat"), st.integers(0, 10**6), st.integers(1, 40), st.integers(2, 50)),
)


def _apply(data: bytes, edits: list[tuple]) -> bytes:  # type: ignore[type-arg]
    for edit in edits:
        at = edit[1] % (len(data) + 1)
        if edit[0] == "flip" and data:
            at %= len(data)
            data = data[:at] + bytes([edit[2]]) + data[at + 1 :]
        elif edit[0] == "cut":
            data = data[:at] + data[at + edit[2] :]
        elif edit[0] == "truncate":
            data = data[:at]
        elif edit[0] in ("splice", "insert"):
            data = data[:at] + edit[2] + data[at:]
        elif edit[0] == "repeat":
            data = data[:at] + data[at : at + edit[2]] * edit[3] + data[at:]
    return data


_SCALARS = st.sampled_from([
    "2024-02-29", "2023-02-29", "2023-13-01", "2023-02-29 25:61:00", "12:30:00", "0x1F",
    "0o17", "1e400", ".inf", ".nan", "~", "yes", "''", "!!binary aGVsbG8=", "!!binary !!",
    "!!python/object:os.system x", "!!set {a, b}", "!!omap [a: 1]", "!!int x", "[a, b]",
    "{a: 1}", "*undefined", "&anchor x", "<<", "|\n  block", "employee, hr",
])


@st.composite
def _yaml_value(draw: st.DrawFn) -> str:
    """A front-matter value: a tricky scalar, or nesting or aliases of a chosen size."""
    shape = draw(st.sampled_from(["scalar", "flow", "block", "aliases"]))
    depth = draw(st.sampled_from([1, 2, 30, 63, 64, 65, 300, 999, 1200, 5000]))
    if shape == "scalar":
        return draw(_SCALARS)
    if shape == "flow":
        return "[" * depth + draw(_SCALARS) + "]" * depth
    if shape == "block":
        return "\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(min(depth, 1200)))
    return "&v0 [1, 2]\n" + "".join(f"v{i + 1}: &v{i + 1} [*v{i}, *v{i}]\n" for i in range(8))


@st.composite
def _front_matter_file(draw: st.DrawFn) -> bytes:
    keys = st.sampled_from(["title", "roles", "doc_id", "date", "tags", "meta", "chunker"])
    lines = [f"{draw(keys)}: {draw(_yaml_value())}" for _ in range(draw(st.integers(1, 4)))]
    return ("---\n" + "\n".join(lines) + "\n---\n# Body\n\nSome text.\n").encode()


@st.composite
def _jsonl_file(draw: st.DrawFn) -> bytes:
    depth = draw(st.sampled_from([1, 60, 62, 63, 64, 100, 990, 1200, 100_000]))
    nested = '{"a":' * depth + "1" + "}" * depth
    field = draw(st.sampled_from(["metadata", "extra", "roles", "title"]))
    record = '{"doc_id": "d", "text": "t", "' + field + '": ' + nested + "}"
    return (record + "\n" + json.dumps({"doc_id": "ok", "text": "Fine."}) + "\n").encode()


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """A format's suffix and a mutated sample of it."""
    kind = draw(st.sampled_from(sorted(samples())))
    if kind in ("md", "jsonl") and draw(st.booleans()):  # structure-aware for YAML and JSON
        made = draw(_front_matter_file() if kind == "md" else _jsonl_file())
        return kind, _apply(made, draw(st.lists(_edit, max_size=1)))
    raw = samples()[kind]
    edits = draw(st.lists(_edit, min_size=1, max_size=4))
    if kind in ("docx", "pptx") and draw(st.booleans()):
        pick = draw(st.integers(0, 100))
        return kind, _rezip_member(raw, pick, lambda data: _apply(data, edits))
    return kind, _apply(raw, edits)


def _check(path: Path) -> None:
    result = read_file(path)  # must not raise, whatever the bytes
    for failure in result.errors:
        assert failure.path == str(path) or failure.path.startswith(f"{path}:"), failure
        assert isinstance(failure.error, str) and failure.error.strip()
        assert "Traceback" not in failure.error
    for doc in result.documents:
        assert isinstance(doc.text, str) and doc.text.strip()
        json.dumps(doc.metadata, default=str)  # storable


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_every_reader_survives_mutated_files(case: tuple[str, bytes]) -> None:
    kind, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"sample.{kind}"
        path.write_bytes(data)
        _check(path)


def test_every_unmutated_sample_reads_cleanly() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for kind, data in samples().items():
            path = Path(tmp) / f"sample.{kind}"
            path.write_bytes(data)
            result = read_file(path)
            assert result.errors == [] and result.documents, kind


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(mutated(), min_size=5, max_size=12))
def test_a_batch_of_mutated_files_never_stops_the_ingest(cases: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "inbox"
        folder.mkdir()
        for number, (kind, data) in enumerate(cases):
            (folder / f"f{number}.{kind}").write_bytes(data)
        (folder / "marker.md").write_text("# Marker\n\nquokka census results\n")
        kb = KnowledgeBase.open(Path(tmp) / "kb")
        try:
            report = kb.ingest([folder])
            for failure in report.failed:
                assert failure.path.split(":")[0].startswith(str(folder)), failure
            assert kb.search("quokka census").hits
        finally:
            kb.close()
