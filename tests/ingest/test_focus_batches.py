"""The FOCUS column reader (ingest/connectors/focus/batches.py + ingest/columnar.py) against the row reader.

Finance must get the same lines whichever reader took a file: same periods, models, tokens, exact costs,
tags, attribution and rollup. The column reader takes the common shape of real exports (the bench's
generated Bedrock export, a FOCUS 1.3 per-token API export) and declines the rest, which the row reader
then imports or refuses with the line named.
"""

import datetime as dt
import gzip
import logging
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import transaction

from bench.focus_export import write_focus_csv
from bench.focus_resources import write_resource_focus_csv
from finops.models import Account, AttributionRule, DailySpend, FxRate, IngestRun, Provider, Team, UsageLine, Workload
from ingest.columnar import write_batches
from ingest.connectors.base import BatchDeclined
from ingest.connectors.focus.batches import focus_csv_batches
from ingest.connectors.focus.file import FocusFile
from ingest.connectors.focus.format import resolve_header
from ingest.connectors.focus.scope import LeftOut, Scope
from ingest.services import usage_file_import
from ingest.writing import write_rows
from tests.rollup_check import KEY, MEASURES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "focus_file"
LINE_FIELDS = (
    "provider_id",
    "period_start",
    "period_end",
    "model",
    "model_raw",
    "service_tier",
    "project_ref",
    "api_key_ref",
    "user_ref",
    "tag_set__tags",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "requests",
    "cost",
    "currency",
    "reporting_cost",
    "cost_basis",
    "charge_category",
    "errors",
    "latency",
    "billing_period_start",
    "signature__workload_id",
    "signature__team_id",
)


@pytest.fixture(scope="module")
def bedrock_export(tmp_path_factory) -> Path:
    """The bench's generated FOCUS 1.2 Bedrock export (hourly per-token lines, exponent-form small costs)."""
    path = tmp_path_factory.mktemp("focus") / "bedrock-2026-03.csv"
    write_focus_csv(path, 3_000, seed=7)
    return path


@pytest.fixture(scope="module")
def per_resource_export(tmp_path_factory) -> Path:
    """The bench's per-resource export (issue 23): daily rows of 5,000 application inference profiles, tags on each."""
    path = tmp_path_factory.mktemp("focus") / "bedrock-resources-2026-03.csv"
    write_resource_focus_csv(path, 3_000, seed=7)
    return path


@pytest.fixture(scope="module")
def bedrock_export_gz(bedrock_export) -> Path:
    target = bedrock_export.with_suffix(".csv.gz")
    with bedrock_export.open("rb") as source, gzip.open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    return target


@pytest.fixture(scope="module")
def bedrock_export_eur(bedrock_export) -> Path:
    """The same export billed in EUR: every amount converts at its day's rate."""
    target = bedrock_export.with_name("bedrock-eur.csv")
    target.write_text(bedrock_export.read_text().replace(",USD,", ",EUR,"))
    return target


@pytest.fixture(autouse=True)
def eur_rate(db):
    FxRate.objects.create(day=dt.date(2025, 1, 1), currency="EUR", rate=Decimal("1.0842"))


@pytest.fixture
def rules(db):
    """Rules on a tag, a sub-account and a model glob, so attribution at write time is compared too."""
    team = Team.objects.create(name="Risk", slug="risk")
    by_tag = Workload.objects.create(team=team, name="Risk agents", slug="risk-agents")
    by_model = Workload.objects.create(team=team, name="Haiku jobs", slug="haiku-jobs")
    AttributionRule.objects.create(workload=by_tag, priority=1, tags={"user:team": "risk"})
    AttributionRule.objects.create(workload=by_model, priority=2, model="claude-haiku*")
    return by_tag, by_model


def new_account(name: str, file_name: str = "") -> Account:
    """An account of the provider whose file it imports (an import keeps its own provider's rows only)."""
    if "azure" in file_name:
        provider = Provider.objects.get(slug="azure-openai")
    elif "gcp" in file_name:
        provider = Provider.objects.get(slug="gcp-vertex")
    elif "per_token_api" in file_name or "nulls" in file_name:
        provider = Provider.objects.get_or_create(slug="solora-ai", defaults={"name": "Solora AI"})[0]
    elif file_name.startswith(("negative", "bad_date")):
        provider = Provider.objects.get(slug="openai")
    else:
        provider = Provider.objects.get(slug="aws-bedrock")
    return Account.objects.create(name=name, provider=provider, connector="focus_file")


def lines(account: Account) -> Counter:
    return Counter(
        tuple(repr(v) for v in row) for row in UsageLine.objects.filter(account=account).values_list(*LINE_FIELDS)
    )


def rollup(account: Account) -> Counter:
    fields = (*(d for d in KEY if d != "account_id"), *MEASURES, "line_count")
    return Counter(DailySpend.objects.filter(account=account).values_list(*fields))


def import_both_ways(path: Path) -> tuple[Account, Account]:
    """The file imported by each reader, scoped to its account; both leave out the same rows and cost."""
    by_columns, by_rows = new_account("columns", path.name), new_account("rows", path.name)
    left_out = {}
    for account, columnar in ((by_columns, True), (by_rows, False)):
        run = IngestRun.objects.create(account=account, trigger="command", file_name=path.name)
        scoped = {"scope": Scope.for_account(account), "left_out": LeftOut()}
        with transaction.atomic(), path.open("rb") as stream:
            if columnar:
                write_batches(
                    account=account, run=run, batches=FocusFile().parse_batches(stream, file_name=path.name, **scoped)
                )
            else:
                write_rows(account=account, run=run, rows=FocusFile().parse(stream, file_name=path.name, **scoped))
        left_out[columnar] = scoped["left_out"].as_json()
    assert left_out[True] == left_out[False]
    return by_columns, by_rows


@pytest.mark.parametrize(
    "export",
    [
        "bedrock_export",
        "bedrock_export_gz",
        "bedrock_export_eur",
        "per_resource_export",
        "per_token_api_focus_1_3.csv",
        "aws_bedrock_focus_1_0.csv",
        "negative_tokens.csv",
        "cloud/aws_whole_cloud_focus_1_3.csv",
        "cloud/aws_whole_cloud_focus_1_2.csv",
    ],
)
def test_the_column_reader_stores_the_same_lines_and_rollup_as_the_row_reader(export, rules, request):
    path = (
        (FIXTURES.parent / "focus_cloud" / export[6:] if export.startswith("cloud/") else FIXTURES / export)
        if export.endswith(".csv")
        else request.getfixturevalue(export)
    )

    by_columns, by_rows = import_both_ways(path)

    expected = lines(by_rows)
    assert sum(expected.values()) > 0
    assert lines(by_columns) == expected
    assert rollup(by_columns) == rollup(by_rows)
    attributed = UsageLine.objects.filter(account=by_columns, signature__workload__isnull=False).count()
    if export.startswith("bedrock") or export == "per_resource_export":
        assert 0 < attributed < UsageLine.objects.filter(account=by_columns).count()


def test_an_import_takes_the_column_reader_when_the_file_allows_it(bedrock_export, db, caplog):
    account = new_account("bedrock")
    with caplog.at_level(logging.INFO, logger="ingest.services"), bedrock_export.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=bedrock_export.name)

    assert run.status == "succeeded", run.error
    assert run.lines_written == 3_000 == UsageLine.objects.filter(account=account).count()
    assert "read row by row" not in caplog.text


@pytest.mark.parametrize(
    "fixture, reason",
    [
        ("azure_openai_focus_1_2.csv", "BilledCost"),  # `2.0005E1`: a positive exponent
        ("gcp_vertex_focus_1_3.csv", "quantity"),  # `1.5E5` tokens
        ("bad_date.csv", "ChargePeriodStart"),
    ],
)
def test_rare_forms_are_declined_and_then_read_row_by_row(fixture, reason, db, caplog):
    with (FIXTURES / fixture).open("rb") as stream, pytest.raises(BatchDeclined, match=reason):
        list(focus_csv_batches(stream, file_name=fixture))

    account = new_account(fixture, fixture)
    with caplog.at_level(logging.INFO, logger="ingest.services"), (FIXTURES / fixture).open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=fixture)

    assert "read row by row" in caplog.text
    with (FIXTURES / fixture).open("rb") as stream:
        try:
            expected = sum(1 for _ in FocusFile().parse(stream, file_name=fixture, scope=Scope.for_account(account)))
        except Exception as error:  # the row reader refuses the file: so does the import, naming the line
            assert run.status == "failed" and str(error) == run.error and " line " in run.error
            assert not UsageLine.objects.filter(account=account).exists()
            return
    assert run.status == "succeeded" and run.lines_written == expected


def test_a_padded_or_null_cell_is_read_as_the_row_reader_reads_it(tmp_path, rules):
    """Null markers read as empty, meter cells are stripped by the meter reader itself; a padded cell elsewhere
    sends the file to the row reader, which strips it."""
    original = (FIXTURES / "per_token_api_focus_1_3.csv").read_text().splitlines()
    header = original[0].split(",")
    nulls = tmp_path / "nulls.csv"
    nulls.write_text("\n".join([original[0], *(line.replace(",,", ",null,", 1) for line in original[1:])]) + "\n")
    with nulls.open("rb") as stream:
        assert sum(len(b) for b in focus_csv_batches(stream, file_name=nulls.name)) == len(original) - 1
    by_columns, by_rows = import_both_ways(nulls)
    assert lines(by_columns) == lines(by_rows)

    padded = tmp_path / "padded.csv"
    cells = original[1].split(",")
    cells[header.index("ChargeCategory")] = " " + cells[header.index("ChargeCategory")]
    padded.write_text("\n".join([original[0], ",".join(cells)]) + "\n")
    with padded.open("rb") as stream, pytest.raises(BatchDeclined, match="spaces"):
        list(focus_csv_batches(stream, file_name=padded.name))


@pytest.mark.parametrize("column", ["ChargeCategory", "unread"])
def test_a_nul_byte_anywhere_declines_the_file_and_the_row_reader_names_its_line(column, tmp_path, db):
    """The row reader refuses a line holding a NUL byte, in whichever cell; the column reader watches the bytes it
    reads (not only the columns it parses), so it declines the same files and the import fails naming the line."""
    original = (FIXTURES / "per_token_api_focus_1_3.csv").read_text().splitlines()
    header = original[0].split(",")
    if column == "unread":
        read = set(resolve_header(header, "x").values())
        column = next(name for i, name in enumerate(header) if i not in read)
    cells = original[2].split(",")
    cells[header.index(column)] = "\x00" + cells[header.index(column)]
    damaged = tmp_path / "nul.csv"
    damaged.write_text("\n".join([original[0], original[1], ",".join(cells), *original[3:]]) + "\n")
    with damaged.open("rb") as stream, pytest.raises(BatchDeclined, match="NUL"):
        list(focus_csv_batches(stream, file_name=damaged.name))

    account = new_account("nul", "per_token_api")
    with damaged.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=damaged.name)
    assert run.status == "failed" and "nul.csv line 3: holds a NUL byte" in run.error, run.error
    assert not UsageLine.objects.filter(account=account).exists()


def test_blocks_gathered_into_batches_store_the_same_lines(per_resource_export, rules, monkeypatch):
    """Arrow reads a file in blocks, gathered into batches of BATCH_ROWS rows or more: small ones here, so a
    batch spans several blocks (and a block boundary falls inside a batch), and the lines are the row reader's."""
    from ingest.connectors.focus import batches

    monkeypatch.setattr(batches, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(batches, "BATCH_ROWS", 700)
    with per_resource_export.open("rb") as stream:
        sizes = [len(batch) for batch in focus_csv_batches(stream, file_name=per_resource_export.name)]
    assert sum(sizes) == 3_000 and len(sizes) > 2 and all(size >= 700 for size in sizes[:-1]), sizes

    by_columns, by_rows = import_both_ways(per_resource_export)
    assert lines(by_columns) == lines(by_rows)
    assert rollup(by_columns) == rollup(by_rows)
