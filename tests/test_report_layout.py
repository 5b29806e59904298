"""The report's PDF layout is a pure function of the document and its charts: the same input laid out twice gives
the same bytes (no identifier, date or random id made up by WeasyPrint). The test suite lays out each distinct
document once per test run on the strength of this (tests/conftest.py `_each_pdf_laid_out_once`); a WeasyPrint
that began to stamp its PDFs would fail here rather than hide behind that memo."""

from finops.reports import tco_pdf
from tests import conftest

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#336"/></svg>'


def _document(title: str) -> str:
    return f'<html><body><h1>{title}</h1><img src="{tco_pdf.CHART_SCHEME}0"></body></html>'


def _laid_out_afresh(document: str, charts: list[bytes]) -> bytes:
    """A real layout: WeasyPrint's, past the memo (in this process and the run's files), so nothing is reused."""
    assert conftest.REAL_LAY_OUT is not None and conftest.REAL_LAY_OUT is not tco_pdf.lay_out
    return conftest.REAL_LAY_OUT(document, charts)


def test_the_same_document_laid_out_twice_gives_the_same_bytes():
    first = _laid_out_afresh(_document("October 2026"), [SVG])
    assert first.startswith(b"%PDF-")
    assert _laid_out_afresh(_document("October 2026"), [SVG]) == first
    assert _laid_out_afresh(_document("November 2026"), [SVG]) != first  # the bytes follow the document
    assert _laid_out_afresh(_document("October 2026"), [SVG.replace(b"#336", b"#633")]) != first  # and the charts
