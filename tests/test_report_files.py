"""The monthly TCO report as files (issue 14) on the demo organisation's last full month: the XLSX against the CSV,
and `manage.py tco_report` writing each format, a published version, and refusing a month not begun."""

import csv
import io
import subprocess
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from openpyxl import load_workbook

from finops.models import User
from finops.reports import tco_formats
from finops.reports.services.reports import report_publish
from finops.reports.tco_tables import SECTIONS, TABLES, TITLES, rows_with_total
from tests.demo_helpers import OCTOBER_AT, demo_loaded_once, october_report

MONEY = ("money", "per_mtok", "per_outcome", "price")


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo, and October's report made once for the module's tests (they only read it: ~0.3 s a report)."""
    with demo_loaded_once(django_db_blocker, tmp_path_factory) as summary:
        yield {"summary": summary, "october": october_report()}


@pytest.fixture
def october(demo, db):
    return demo["october"]


@pytest.fixture
def on_the_demos_day(time_machine):
    """At the instant October's report above is made: the command's PDF of it is that report's document, the one
    tests/test_report_pdf.py lays out (once a run: tests/demo_helpers.py OCTOBER_AT)."""
    time_machine.move_to(OCTOBER_AT, tick=False)


def _csv_tables(text: str) -> dict[str, list[dict]]:
    """{table title: rows as dicts} from the report's CSV (each table: its title, its header, its rows, a blank)."""
    lines = list(csv.reader(io.StringIO(text)))
    titles = {TITLES[name] for name in TABLES}
    found, index = {}, 0
    while index < len(lines):
        if lines[index] and lines[index][0] in titles and len(lines[index]) == 1:
            header, rows = lines[index + 1], []
            index += 2
            while index < len(lines) and lines[index]:
                rows.append(dict(zip(header, lines[index])))
                index += 1
            found[lines[index - len(rows) - 2][0]] = rows
        index += 1
    return found


def test_the_xlsx_has_a_sheet_per_table_numbers_as_numbers_and_the_csvs_totals(october):
    book = load_workbook(io.BytesIO(tco_formats.xlsx(october)))
    assert len(book.sheetnames) == len(TABLES)
    stream = io.StringIO()
    tco_formats.write_csv(october, stream)
    tables = _csv_tables(stream.getvalue())
    assert set(tables) == {TITLES[name] for name in TABLES}
    checked = 0
    for section in SECTIONS:
        for table in section.tables:
            sheet = book[tco_formats._sheet_name(TITLES[table.name])]
            header = [cell.value for cell in sheet[2]]
            rows = list(sheet.iter_rows(min_row=3))
            # every row, and the table's totals row where it has one (tco_tables.TOTALS)
            assert (
                len(rows) == len(tables[TITLES[table.name]]) == len(rows_with_total(table, october.rows(table.name)))
            ), table.name
            for column in table.columns:
                if column.kind not in MONEY:
                    continue
                title = column.title(csv=True)
                at = header.index(title)
                cells = [row[at] for row in rows if row[at].value is not None]
                for cell in cells:  # a number with a number format, never text
                    assert isinstance(cell.value, (int, float, Decimal)) and cell.data_type == "n", (table.name, title)
                    assert cell.number_format.startswith('"$"') and "0.00" in cell.number_format, (
                        table.name,
                        title,
                        cell.number_format,
                    )  # a currency format: the demo reports in USD
                xlsx_total = sum(Decimal(str(cell.value)) for cell in cells)
                csv_total = sum(Decimal(row[title]) for row in tables[TITLES[table.name]] if row[title])
                # The CSV carries each figure to 6 decimals, the XLSX the figure itself: they agree within that
                # rounding.
                assert abs(xlsx_total - csv_total) <= Decimal("0.0000005") * len(cells) + Decimal("1e-9"), (
                    table.name,
                    title,
                )
                assert round(xlsx_total, 2) == round(csv_total, 2), (table.name, title)
                checked += bool(cells)
            if "Currency" in header and rows:
                assert {row[header.index("Currency")].value for row in rows} <= {"USD", "EUR", "GBP"}
    assert checked >= 15  # every table with money in October has its totals compared
    spend = [row[1].value for row in book[tco_formats._sheet_name(TITLES["summary"])].iter_rows(min_row=3)]
    assert Decimal(str(spend[0])) == october.summary["cost"]


def test_the_command_writes_each_format(october, on_the_demos_day, tmp_path):
    written = {}
    for kind in ("html", "pdf", "csv", "xlsx"):
        path = tmp_path / f"report.{kind}"
        out = io.StringIO()
        call_command("tco_report", "--format", kind, "--output", str(path), stdout=out)  # default month: October
        assert "Wrote the TCO report of October 2026" in out.getvalue() and path.stat().st_size > 0
        written[kind] = path
    html = written["html"].read_text()
    assert html.startswith("<!doctype html>") and 'TCO report <span class="month">October 2026</span>' in html
    assert html.count('src="data:image/svg+xml;base64,') == 6 and "http://" not in html.replace("http://www.w3.org", "")
    assert written["pdf"].read_bytes().startswith(b"%PDF-")
    text = subprocess.run(["pdftotext", str(written["pdf"]), "-"], capture_output=True, text=True, check=True).stdout
    assert "TCO report October 2026" in " ".join(text.split())
    assert written["csv"].read_text().startswith('"TCO report, October 2026')
    book = load_workbook(written["xlsx"])
    assert len(book.sheetnames) == len(TABLES)
    summary = book[tco_formats._sheet_name(TITLES["summary"])]
    assert Decimal(str(summary.cell(row=3, column=2).value)) == october.summary["cost"]


def test_the_command_refuses_a_month_not_begun_and_says_why(demo, db, on_the_demos_day, tmp_path):
    with pytest.raises(CommandError, match="December 2026 has not begun"):
        call_command("tco_report", "--month", "2026-12", "--output", str(tmp_path / "x.pdf"))
    with pytest.raises(CommandError, match="November 2026 has no complete day yet"):
        call_command("tco_report", "--month", "2026-11", "--output", str(tmp_path / "x.pdf"))
    with pytest.raises(CommandError, match="Unknown month"):
        call_command("tco_report", "--month", "October", "--output", str(tmp_path / "x.pdf"))
    assert not (tmp_path / "x.pdf").exists()


def test_a_month_with_no_data_is_written_and_says_so(demo, db, on_the_demos_day, tmp_path):
    out = io.StringIO()
    call_command(
        "tco_report", "--month", "2025-01", "--format", "html", "--output", str(tmp_path / "jan.html"), stdout=out
    )
    assert "no spend recorded" in out.getvalue()
    assert "No spend was recorded for January 2025" in (tmp_path / "jan.html").read_text()


def test_the_command_writes_a_published_version_and_refuses_one_that_is_not(october, on_the_demos_day, tmp_path):
    snapshot = report_publish(report=october, by=User.objects.get(username="cfo"))
    path = tmp_path / "v.pdf"
    call_command(
        "tco_report",
        "--month",
        "2026-10",
        "--version",
        str(snapshot.version),
        "--output",
        str(path),
        stdout=io.StringIO(),
    )
    text = " ".join(
        subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout.split()
    )
    assert f"Published version {snapshot.version}" in text and "by cfo" in text
    with pytest.raises(
        CommandError,
        match=f"2026-10 has no version {snapshot.version + 1}: published versions are (.*, )?{snapshot.version}\\.$",
    ):
        call_command("tco_report", "--month", "2026-10", "--version", str(snapshot.version + 1), "--output", str(path))


def test_the_command_reads_as_a_named_user_only_if_they_may_see_reports(demo, db, on_the_demos_day, tmp_path):
    with pytest.raises(CommandError, match="may not see reports"):
        call_command("tco_report", "--user", "support-lead", "--format", "csv", "--output", str(tmp_path / "x.csv"))
    call_command(
        "tco_report", "--user", "cfo", "--format", "csv", "--output", str(tmp_path / "x.csv"), stdout=io.StringIO()
    )
    assert (tmp_path / "x.csv").read_text().startswith('"TCO report, October 2026')
