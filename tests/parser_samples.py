"""Generators for the files the parser tests read: every sample is written by the tests.

``make_pdf`` is a minimal PDF writer (one Helvetica text object per page, one line per
``Tj``), enough for pypdf to extract exactly the lines given; python-docx and python-pptx
write the Office files; the e-mails come from the standard library.
"""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], title: str | None = None,
             extra: dict[int, str] | None = None) -> bytes:
    """A valid PDF with one page per entry of ``pages``, each line a ``Tj`` of its own.

    A line starting with ``@`` is raw content-stream operators (``@1 1 1 rg``), written as
    is; ``extra`` maps object numbers from 100 up to more objects (form XObjects, ExtGStates),
    which the page resources name as ``/Fm<n>`` and ``/Gs<n>``.
    """
    count = len(pages)
    extra = extra or {}
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: (f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(count))}]"
            f" /Count {count} >>").encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica"
           b" /Encoding /WinAnsiEncoding >>",
    }
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        ops += [line[1:] if line.startswith("@") else f"({_pdf_string(line)}) Tj T*"
                for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1") if lines else b""
        forms = " ".join(f"/Fm{n} {n} 0 R" for n in extra if b"/Form" in extra[n].encode())
        states = " ".join(f"/Gs{n} {n} 0 R" for n in extra if "/ExtGState" in extra[n])
        objects[4 + 2 * i] = (
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            f" /Resources << /Font << /F1 3 0 R >> /XObject << {forms} >>"
            f" /ExtGState << {states} >> >> /Contents {5 + 2 * i} 0 R >>"
        ).encode()
        objects[5 + 2 * i] = (b"<< /Length %d >>\nstream\n" % len(stream)) + stream + \
            b"\nendstream"
    for number, body in extra.items():
        objects[number] = body.encode("latin-1")
    info = ""
    if title is not None:
        objects[4 + 2 * count] = f"<< /Title ({_pdf_string(title)}) >>".encode("latin-1")
        info = f" /Info {4 + 2 * count} 0 R"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number] if number in offsets else \
            b"0000000000 65535 f \n"
    out += f"trailer\n<< /Size {size} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def pdf_form(content: str) -> str:
    """A form XObject (for ``make_pdf(extra=...)``) drawing ``content`` with font /F1."""
    data = content.encode("latin-1")
    return ("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792]"
            " /Resources << /Font << /F1 3 0 R >> >>"
            f" /Length {len(data)} >>\nstream\n{content}\nendstream")


def encrypt_pdf(raw: bytes, user_password: str) -> bytes:
    """``raw`` encrypted with RC4 (pure Python in pypdf; no cryptography package needed)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.core_properties.title = "Travel policy"
    document.core_properties.author = "Finance"
    document.add_heading("Travel policy", level=1)
    document.add_paragraph("Employees book trains for trips under four hours.")
    document.add_heading("Allowances", level=2)
    document.add_paragraph("The daily meal allowance is 45 euros.")
    table = document.add_table(rows=3, cols=2)
    for row, (city, rate) in zip(table.rows, [("City", "Rate"), ("Paris", "60"),
                                              ("Berlin", "55")], strict=True):
        row.cells[0].text, row.cells[1].text = city, rate
    document.add_paragraph("")  # an empty paragraph leaves no trace
    document.add_paragraph("Receipts are kept for seven years.")
    document.save(str(path))
    return path


def make_pptx(path: Path) -> Path:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Quarterly results"
    first.placeholders[1].text_frame.text = "Revenue grew 12 percent"
    first.placeholders[1].text_frame.add_paragraph().text = "Costs were flat"
    first.notes_slide.notes_text_frame.text = "Mention the new office."
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Regional split"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, values in enumerate([("Region", "Share"), ("North", "40%")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    third = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title
    box = third.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "Questions welcome"
    deck.save(str(path))
    return path


def make_eml(body: str = "Hello team,\n\nThe kickoff is on Monday at 9.\n\nRegards,\nAda\n",
             html: str | None = None, subject: str = "Project kickoff") -> bytes:
    message = EmailMessage()
    message["From"] = "Ada Lovelace <ada@example.org>"
    message["To"] = "team@example.org"
    message["Subject"] = subject
    message["Date"] = "Mon, 06 Jan 2025 09:00:00 +0000"
    if body:
        message.set_content(body)
        if html is not None:
            message.add_alternative(html, subtype="html")
    elif html is not None:
        message.set_content(html, subtype="html")
    return bytes(message)


def make_zip(entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def make_docx_table(rows: int, cols: int, text: str = "") -> bytes:
    """A Word file holding one ``rows`` x ``cols`` table (cells empty unless ``text``).

    python-docx writes the package; the table XML is generated directly, since building a
    large table cell by cell through python-docx takes seconds.
    """
    import docx

    document = docx.Document()
    document.add_paragraph("Quarterly grid")
    document.add_table(rows=1, cols=1)
    buffer = io.BytesIO()
    document.save(buffer)
    width = 9000 // cols
    cell = (f'<w:tc><w:tcPr><w:tcW w:w="{width}" w:type="dxa"/></w:tcPr><w:p>'
            + (f"<w:r><w:t>{text}</w:t></w:r>" if text else "") + "</w:p></w:tc>")
    grid = "".join(f'<w:gridCol w:w="{width}"/>' for _ in range(cols))
    table = (f'<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr>'
             f"<w:tblGrid>{grid}</w:tblGrid>" + ("<w:tr>" + cell * cols + "</w:tr>") * rows
             + "</w:tbl>")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "word/document.xml":
                xml = data.decode("utf-8")
                start, end = xml.index("<w:tbl>"), xml.index("</w:tbl>") + len("</w:tbl>")
                data = (xml[:start] + table + xml[end:]).encode("utf-8")
            dst.writestr(info.filename, data)
    return out.getvalue()
