"""E-mail (.eml, RFC 822) via the standard library: subject as title, text body as text.

``from``, ``to``, ``date`` and ``message_id`` go into metadata. The ``text/plain`` body is
preferred; an HTML-only message is converted like an HTML page (that needs the extra). When
the body is stored in the file as is (one plain part, no transfer encoding, no wrapping),
``line_offset`` makes chunk line numbers the lines of the ``.eml`` file itself.

The standard library's header parser costs time and memory that grow much faster than a
header's length (a 1.4 MB Subject of encoded words: 45 s, 14 GB), and it runs when a header
is first read, so the raw size of every header of every part is checked before any is read.
"""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from typing import Any

from glassrag.errors import InputFileError
from glassrag.parsers.base import Limits, Parsed, ParseOptions, TextBuilder, clean_text
from glassrag.parsers.office import describe

LABEL = "e-mail (.eml)"
_HEADER_LINE = re.compile(rb"[!-9;-~]+:[ \t]?")  # a field name: printable, no colon or space
_KNOWN = (b"from", b"to", b"subject", b"date", b"message-id", b"received", b"mime-version",
          b"return-path", b"delivered-to", b"cc", b"reply-to", b"x-")


def sniff(raw: bytes, limits: Limits) -> None:
    head = raw[:8192].replace(b"\r\n", b"\n")
    if head.startswith(b"From "):  # an mbox "From " line before the headers
        head = head.split(b"\n", 1)[-1]
    lines = head.split(b"\n\n", 1)[0].split(b"\n")
    fields = [line for line in lines if line and line[:1] not in b" \t"]
    ok = fields and all(_HEADER_LINE.match(line) for line in fields[:20])
    if not ok or not any(line.lower().startswith(_KNOWN) for line in fields):
        raise InputFileError(f"not an e-mail: no RFC 822 header block ({describe(raw)})")


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError):  # a malformed header: keep going without it
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _check_headers(message: EmailMessage, limits: Limits) -> None:
    """Refuse a header field, or all header fields together, over the caps (raw sizes)."""
    cap, total_cap = limits.max_email_header_bytes, limits.max_email_headers_bytes
    total = 0
    for part in message.walk():
        for name, value in part.raw_items():
            size = len(name) + len(value) + 2
            total += size
            if size > cap:
                raise InputFileError(
                    f"e-mail header {name[:40]} is {size:,} bytes, over the {cap:,}-byte cap")
            if total > total_cap:
                raise InputFileError(
                    f"e-mail headers total over the {total_cap:,}-byte cap")


def parse(raw: bytes, stem: str, options: ParseOptions) -> Parsed:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    _check_headers(message, options.limits)
    metadata: dict[str, Any] = {}
    for name in ("from", "to", "cc", "date", "message-id"):
        value = _header(message, name)
        if value:
            metadata[name.replace("-", "_")] = value
    subject = _header(message, "subject")
    plain = message.get_body(preferencelist=("plain",))
    body = plain or message.get_body(preferencelist=("html",))
    if body is None:
        raise InputFileError("e-mail has no text/plain or text/html body")
    try:
        content = body.get_content()
    except (LookupError, ValueError, AssertionError) as exc:  # unknown charset, bad encoding
        raise InputFileError(f"cannot decode the e-mail body: {exc}") from exc
    if not isinstance(content, str):
        raise InputFileError("the e-mail body is not text")
    metadata["body"] = body.get_content_type()
    if plain is None:
        from glassrag.parsers.webpage import html_to_text

        converted = html_to_text(content, subject or stem, options)
        return Parsed(text=converted.text, title=subject or converted.title,
                      metadata=metadata, positions=converted.positions,
                      hidden_dropped=converted.hidden_dropped)
    out = TextBuilder(options.limits)
    out.add(content, keep_spaces=True)
    text, positions = out.build()
    if not text.strip():
        raise InputFileError("the e-mail body is empty")
    return Parsed(text=text, title=subject or stem, metadata=metadata, positions=positions,
                  line_offset=_body_offset(raw, message, text))


def _body_offset(raw: bytes, message: EmailMessage, text: str) -> int:
    """File lines before the body, when the body text is exactly the file's; else 0."""
    if message.is_multipart():
        return 0
    encoding = str(message.get("content-transfer-encoding", "7bit")).strip().lower()
    if encoding not in ("7bit", "8bit"):
        return 0
    data = raw.replace(b"\r\n", b"\n")
    split = data.find(b"\n\n")
    if split < 0:
        return 0
    offset = data[: split + 2].count(b"\n")  # the header lines and the blank line after them
    lines = clean_text(data[split + 2 :].decode("utf-8", "replace")).split("\n")
    while lines and not lines[0].strip():  # the text starts at the first non-blank line
        lines.pop(0)
        offset += 1
    same = "\n".join(line.rstrip() for line in lines).rstrip() == text
    return offset if same else 0
