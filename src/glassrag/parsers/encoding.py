"""Which text encoding a file's bytes are in, and newlines made uniform.

Text formats (Markdown, reST, plain text, JSONL) and the parsers that read text out of bytes
(HTML, CSV/TSV) all decode through :func:`decode_bytes`: a BOM first, then strict UTF-8,
then the Chinese and Japanese legacy codecs. charset-normalizer is imported only when a file
is not UTF-8.
"""

from __future__ import annotations

import re

from glassrag.errors import InputFileError

__all__ = ["BINARY_SNIFF_BYTES", "decode_bytes", "normalize_text", "utf8_lines_readable"]

BOMS = (  # UTF-32 first: its little-endian BOM begins with the UTF-16 one.
    (b"\xff\xfe\x00\x00", "utf-32", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32", "utf-32"),
    (b"\xef\xbb\xbf", "utf-8-sig", "utf-8-sig"),
    (b"\xff\xfe", "utf-16", "utf-16"),
    (b"\xfe\xff", "utf-16", "utf-16"),
)
CJK_CODECS = ("gb18030", "cp932")  # gb18030 covers GBK/GB2312; cp932 covers Shift_JIS
#: NUL bytes this far into a file (not UTF-16/32) mean it is binary.
BINARY_SNIFF_BYTES = 8192
_RARITY_SAMPLE = 20_000
_MAX_RARITY = 0.5  # real prose, even traditional Chinese read as GBK, stays far below this
# What a wrong legacy codec produces from stray bytes (cp932 maps 0x80 and 0xFD-0xFF to C1
# controls and private-use code points): such a decoding is not "clean", whatever it says.
_UNCLEAN = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ue000-\uf8ff]")


def normalize_text(text: str) -> str:
    """Make CRLF and lone CR into ``\\n`` and drop a leading BOM; nothing else changes."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def utf8_lines_readable(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first :data:`BINARY_SNIFF_BYTES`) can be
    read line by line as UTF-8: no NUL byte, and no UTF-16 or UTF-32 BOM."""
    return b"\x00" not in head and not any(
        head.startswith(bom) for bom, codec, _ in BOMS if codec != "utf-8-sig")


def _is_common(ch: str) -> bool:
    """Whether a character belongs to everyday Chinese (GB2312) or Japanese (JIS level 1)."""
    try:
        ch.encode("gb2312")
        return True
    except UnicodeEncodeError:
        pass
    try:
        return ch.encode("shift_jis") <= b"\x98\x72"  # JIS X 0208 level 1 ends at 0x9872
    except UnicodeEncodeError:
        return False


def _rarity(text: str) -> float:
    """Share of rare characters among the non-ASCII ones in a sample.

    A wrong CJK codec still "succeeds", but into rare ideographs (Shift_JIS read as GBK,
    Latin-1 read as GB18030), so rarity tells a real decoding from mojibake.
    """
    wide = [ch for ch in text[:_RARITY_SAMPLE] if not ch.isascii()]
    return sum(1 for ch in wide if not _is_common(ch)) / len(wide) if wide else 0.0


def decode_bytes(raw: bytes) -> tuple[str, str]:
    """Decode file bytes, returning ``(text, encoding)``; raise InputFileError if impossible.

    Order: a BOM (``utf-8-sig``, ``utf-16``, ``utf-32``), then strict UTF-8, then the Chinese
    and Japanese legacy codecs (gb18030, cp932) ranked by charset-normalizer and by how
    few rare characters each decoding produces. NUL bytes in the first 8 KiB of non-UTF-16/32
    content mean a binary file. The returned text still has the file's own newlines.
    """
    for bom, codec, name in BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec).removeprefix("\ufeff"), name
            except UnicodeDecodeError as exc:
                raise InputFileError(f"not valid {name} despite its BOM: {exc.reason}") from exc
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        raise InputFileError("binary file (NUL bytes in the first 8 KiB)")
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        utf8_error = exc
    from charset_normalizer import from_bytes

    detected = from_bytes(raw, cp_isolation=list(CJK_CODECS))
    detector_rank = {match.encoding: rank for rank, match in enumerate(detected)}
    options: list[tuple[float, int, str, str]] = []
    for codec in CJK_CODECS:
        try:
            text = raw.decode(codec)  # strict: a lossy decode is never "clean"
        except UnicodeDecodeError:
            continue
        if _UNCLEAN.search(text) or (rarity := _rarity(text)) > _MAX_RARITY:
            continue
        options.append((rarity, detector_rank.get(codec, len(CJK_CODECS)), codec, text))
    if not options:
        raise InputFileError(
            f"cannot decode: not UTF-8 (invalid byte at offset {utf8_error.start}), "
            "nor GB18030 or Shift_JIS; save the file as UTF-8"
        )
    _, _, codec, text = min(options)
    return text, codec
