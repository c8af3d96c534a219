"""Word tables read from the XML give exactly python-docx's cell texts, far faster.

python-docx's own ``row.cells`` / ``cell.text`` is the oracle: merged cells (across columns,
down rows, both), tabs, line and page breaks, several paragraphs in a cell, hyperlinks and
non-breaking hyphens must come out the same.
"""

from __future__ import annotations

import io

import docx
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from glassrag.parsers.word_tables import table_rows


def _python_docx_rows(table) -> list[list[str]]:  # type: ignore[no-untyped-def]
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        rows.append(cells)
    return rows


def _awkward_table() -> docx.table.Table:
    document = docx.Document()
    table = document.add_table(rows=5, cols=4)
    for r in range(5):
        for c in range(4):
            table.cell(r, c).text = f"r{r}c{c}"
    table.cell(0, 0).merge(table.cell(0, 1))  # across
    table.cell(1, 2).merge(table.cell(3, 2))  # down
    table.cell(2, 0).merge(table.cell(3, 1))  # a block
    run = table.cell(1, 3).paragraphs[0].add_run("tab")
    run.add_tab()
    run.add_text("after")
    run.add_break()
    run.add_text("line")
    table.cell(1, 3).add_paragraph("second paragraph")
    table.cell(4, 0).paragraphs[0].add_run("page").add_break(docx.enum.text.WD_BREAK.PAGE)
    table.cell(4, 0).paragraphs[0].add_run("joined")
    link = parse_xml(f'<w:hyperlink {nsdecls("w")}><w:r><w:t>linked</w:t></w:r>'
                     "<w:r><w:noBreakHyphen/><w:t>text</w:t></w:r></w:hyperlink>")
    table.cell(4, 1).paragraphs[0]._p.append(link)
    table.cell(4, 2).text = ""
    buffer = io.BytesIO()
    document.save(buffer)
    return docx.Document(io.BytesIO(buffer.getvalue())).tables[0]


def test_cell_texts_match_python_docx() -> None:
    table = _awkward_table()
    expected = _python_docx_rows(table)
    assert list(table_rows(table._tbl)) == expected
    assert expected[0][0] == "r0c0 r0c1" and expected[2][0] == "r2c0 r2c1 r3c0 r3c1"
    assert "r4c1linked-text" in expected[4] and "r4c0pagejoined" in expected[4]


def test_a_continuation_in_the_first_row_is_an_empty_cell() -> None:
    # python-docx raises for this malformed merge; the table is still read.
    tbl = parse_xml(f"<w:tbl {nsdecls('w')}><w:tr>"
                    "<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>"
                    "<w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>")
    assert list(table_rows(tbl)) == [["", "b"]]
