"""Office Open XML (DOCX, PPTX) containers: sniffing and zip-bomb checks.

Everything here reads only the zip's end record and central directory, never inflates a
member except ``[Content_Types].xml`` (after its declared size passed the checks), so a zip
bomb is refused in microseconds and a few kilobytes of memory.
"""

from __future__ import annotations

import io
import struct
import zipfile

from glassrag.errors import InputFileError
from glassrag.parsers.base import Limits

_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_MAX_COMMENT = 0xFFFF
_CONTENT_TYPES = "[Content_Types].xml"
_CONTENT_TYPES_CAP = 1_000_000

WORD_MAIN = "wordprocessingml.document.main+xml"
SLIDES_MAIN = "presentationml.presentation.main+xml"


def _end_record(raw: bytes, label: str) -> tuple[int, int]:
    """``(entries, central directory size)`` from the end-of-central-directory record."""
    at = raw.rfind(_EOCD, max(0, len(raw) - _EOCD_SIZE - _MAX_COMMENT))
    if at < 0 or len(raw) - at < _EOCD_SIZE:
        raise InputFileError(f"not a {label}: the zip archive is truncated (no end record)")
    _, _, _, _, entries, cd_size, _, _ = struct.unpack("<4s4H2LH", raw[at : at + _EOCD_SIZE])
    return entries, cd_size


def check_zip(raw: bytes, label: str, limits: Limits) -> zipfile.ZipFile:
    """Open ``raw`` as a zip after checking its declared sizes against ``limits``.

    Python's zipfile never inflates a member past its declared size (the CRC check fails
    first), so the sizes in the central directory are an honest bound on what parsing costs.
    """
    if not raw.startswith(b"PK\x03\x04"):
        raise InputFileError(f"not a {label}: not a zip archive ({describe(raw)})")
    entries, cd_size = _end_record(raw, label)
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF:
        raise InputFileError(f"not a {label}: ZIP64 archives are not accepted")
    if entries > limits.max_zip_entries:
        raise InputFileError(
            f"zip archive has {entries:,} entries, over the {limits.max_zip_entries:,} cap"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, OSError, ValueError, struct.error) as exc:
        raise InputFileError(f"not a {label}: broken zip archive ({exc})") from exc
    # The bound is on what inflating costs (declared sizes), not on the compression ratio:
    # repetitive XML such as a large, mostly empty Word table legitimately inflates 250x+.
    total = 0
    for info in archive.infolist():
        total += info.file_size
        if total > limits.max_unzipped_bytes:
            raise InputFileError(
                f"zip bomb refused: contents would inflate past the "
                f"{limits.max_unzipped_bytes:,}-byte cap"
            )
    return archive


def content_types(archive: zipfile.ZipFile, label: str) -> str:
    try:
        info = archive.getinfo(_CONTENT_TYPES)
    except KeyError:
        raise InputFileError(f"not a {label}: a zip without {_CONTENT_TYPES}") from None
    if info.file_size > _CONTENT_TYPES_CAP:
        raise InputFileError(f"not a {label}: {_CONTENT_TYPES} is implausibly large")
    try:
        return archive.read(info).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise InputFileError(f"not a {label}: broken zip archive ({exc})") from exc


def sniff_ooxml(raw: bytes, main_type: str, label: str, limits: Limits) -> None:
    """Raise unless ``raw`` is a safe OOXML package whose main part is ``main_type``."""
    archive = check_zip(raw, label, limits)
    with archive:
        types = content_types(archive, label)
    if main_type not in types:
        kind = "Word" if WORD_MAIN in types else "PowerPoint" if SLIDES_MAIN in types else None
        found = f"a {kind} document" if kind else "another kind of Office file"
        raise InputFileError(f"not a {label}: the package is {found}")


def describe(raw: bytes) -> str:
    """A short guess at what some bytes are, for error messages."""
    head = raw[:1024].lstrip()
    if raw.startswith(b"PK\x03\x04"):
        return "a zip archive"
    if b"%PDF-" in raw[:1024]:
        return "a PDF"
    if raw.startswith(b"\xd0\xcf\x11\xe0"):
        return "an old binary Office file (.doc/.ppt); save it as .docx/.pptx"
    if head[:1] == b"<":
        return "markup (HTML or XML)"
    if b"\x00" in raw[:8192]:
        return "binary data"
    return "text"
