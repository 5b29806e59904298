"""A whole-cloud FOCUS export (tests/fixtures/focus_cloud: focus-data-toolkit rows beside the cloud's AI rows and
another cloud's rows) imports only its LLM inference, and says exactly what it left out (issue 21).

The expectation is computed independently with pandas from the file: the AI rows are those of the account's
cloud whose ServiceCategory is "AI and Machine Learning"; written alone to a file, they are the import to match."""

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from django.db.models import Sum

from finops.core.display import left_out_text
from finops.models import Account, IngestRun, Provider, UsageLine
from ingest.connectors.focus.scope import SCOPE_COLUMNS, Scope
from ingest.services import usage_file_import

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "focus_cloud"
AWS, AZURE, GCP = {"AWS"}, {"Microsoft", "Microsoft Azure"}, {"Google Cloud"}
CLOUDS = {  # fixture -> (account provider, the cloud's ProviderNames)
    "aws_whole_cloud_focus_1_2.csv": ("aws-bedrock", AWS),
    "aws_whole_cloud_focus_1_3.csv": ("aws-bedrock", AWS),
    "azure_whole_cloud_focus_1_2.csv": ("azure-openai", AZURE),
    "gcp_whole_cloud_focus_1_2.csv": ("gcp-vertex", GCP),
}
TOTALS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "requests", "cost")


def frame(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def ai_rows(df: pd.DataFrame, provider_names: set) -> pd.Series:
    return (df.ServiceCategory == "AI and Machine Learning") & df.ProviderName.isin(provider_names)


def account(name: str, slug: str, **settings) -> Account:
    return Account.objects.create(
        name=name, provider=Provider.objects.get(slug=slug), connector="focus_file", **settings
    )


def imported(account: Account, path: Path) -> IngestRun:
    with path.open("rb") as stream:
        run = usage_file_import(account=account, stream=stream, file_name=path.name)
    assert run.status == "succeeded", run.error
    return run


def totals(account: Account) -> dict:
    lines = UsageLine.objects.filter(account=account)
    return {
        **lines.aggregate(**{name: Sum(name) for name in TOTALS}),
        "models": sorted(set(lines.values_list("model", flat=True))),
        "lines": lines.count(),
        "providers": sorted(set(lines.values_list("provider__slug", flat=True))),
    }


def money(values) -> Decimal:
    return sum((Decimal(v) for v in values), Decimal(0))


@pytest.mark.parametrize("fixture", sorted(CLOUDS))
def test_a_whole_cloud_file_imports_its_ai_rows_only_and_says_what_it_left_out(fixture, db, tmp_path):
    slug, provider_names = CLOUDS[fixture]
    df = frame(FIXTURES / fixture)
    ai = ai_rows(df, provider_names)
    assert 0 < ai.sum() < len(df) - 250  # the file is mostly other services
    ai_only = tmp_path / "ai_only.csv"
    df[ai].to_csv(ai_only, index=False)

    whole = account("whole", slug)
    run = imported(whole, FIXTURES / fixture)
    alone = account("alone", slug)
    imported(alone, ai_only)

    got, expected = totals(whole), totals(alone)
    assert got == expected  # tokens, requests, cost, models: exactly the AI rows'
    assert got["lines"] == run.lines_written == ai.sum()
    assert got["cost"] == money(df[ai].BilledCost)
    assert got["providers"] == [slug]
    assert "" not in df[ai].ServiceName.tolist()

    left = df[~ai]
    assert run.left_out["rows"] == len(left)
    by_service = {}
    for entry in run.left_out["services"]:
        by_service[entry["service"]] = by_service.get(entry["service"], Decimal(0)) + Decimal(entry["cost"])
    own = left[left.ProviderName.isin(provider_names)]
    other = left[~left.ProviderName.isin(provider_names)]
    expected_services = {name: money(group.BilledCost) for name, group in own.groupby("ServiceName")}
    expected_services |= {
        f"{p}: {s}": money(g.BilledCost) for (p, s), g in other.groupby(["ProviderName", "ServiceName"])
    }
    assert by_service == expected_services
    assert len(other) and all(
        e["reason"] == "another provider"
        for e in run.left_out["services"]
        if e["service"].split(":")[0] != e["service"]
    )
    total = money(left.BilledCost)
    summary = IngestRun.objects.get(id=run.id).left_out_summary
    assert summary.startswith(f"left out {len(left):,} rows, ${total.quantize(Decimal('0.01')):,}: ")
    biggest = max(expected_services, key=lambda name: abs(expected_services[name]))
    assert summary.split(": ", 1)[1].startswith(biggest) or summary.split(": ", 2)[1].startswith(
        biggest.split(": ")[-1]
    )


def test_no_model_is_a_meter_word_or_a_resource_id(db):
    whole = account("whole", "aws-bedrock")
    imported(whole, FIXTURES / "aws_whole_cloud_focus_1_2.csv")
    models = set(UsageLine.objects.filter(account=whole).values_list("model_raw", flat=True))
    assert models == {"claude-sonnet-4-6", "claude-sonnet-4-5", ""} or "" in models
    assert not {"compute", "storage", "data processing", "subscription", "commitment"} & {m.lower() for m in models}
    assert not any(m.startswith(("arn:", "i-", "bucket-", "SKU-")) for m in models)


def test_an_account_can_include_a_service_and_exclude_one(db):
    path = FIXTURES / "aws_whole_cloud_focus_1_2.csv"
    df = frame(path)
    ai = ai_rows(df, AWS)
    ec2 = (df.ServiceName == "AmazonEC2") & df.ProviderName.isin(AWS)

    widened = account("with EC2", "aws-bedrock", focus_services_include=["amazonec2"])
    run = imported(widened, path)
    assert run.lines_written == (ai | ec2).sum()
    assert totals(widened)["cost"] == money(df[ai | ec2].BilledCost)
    assert "AmazonEC2" not in {e["service"] for e in run.left_out["services"]}

    narrowed = account("no Bedrock", "aws-bedrock", focus_services_exclude=["Amazon Bedrock"])
    run = imported(narrowed, path)
    kept = ai & (df.ServiceName != "Amazon Bedrock")
    assert run.lines_written == kept.sum() > 0  # the Marketplace model rows
    excluded = [e for e in run.left_out["services"] if e["reason"] == "excluded by the account's settings"]
    assert [(e["service"], Decimal(e["cost"])) for e in excluded] == [
        ("Amazon Bedrock", money(df[ai & ~kept].BilledCost))
    ]


def test_a_file_of_another_cloud_books_nothing_under_the_account(db):
    gcp = account("gcp", "gcp-vertex")
    run = imported(gcp, FIXTURES / "aws_whole_cloud_focus_1_2.csv")
    assert run.lines_written == 0 and not UsageLine.objects.filter(account=gcp).exists()
    assert run.left_out["rows"] == len(frame(FIXTURES / "aws_whole_cloud_focus_1_2.csv"))
    assert {e["reason"] for e in run.left_out["services"]} == {"another provider"}


def test_the_summary_reads_exact_amounts_by_service():
    text = left_out_text(
        {
            "rows": 1958,
            "services": [
                {
                    "service": "Amazon EC2",
                    "reason": "not LLM inference",
                    "currency": "USD",
                    "rows": 1000,
                    "cost": "18002.1",
                },
                {
                    "service": "Amazon S3",
                    "reason": "not LLM inference",
                    "currency": "USD",
                    "rows": 950,
                    "cost": "23248.13",
                },
                {"service": "Oracle: Compute", "reason": "another provider", "currency": "USD", "rows": 8, "cost": "0"},
            ],
        }
    )
    assert text == (
        "left out 1,958 rows, $41,250.23: Amazon EC2 $18,002.10, Amazon S3 $23,248.13, "
        "Oracle: Compute $0.00 (another provider)"
    )
    assert left_out_text({}) == ""


def decide(scope: Scope, **cells) -> tuple:
    decision = scope.decide(*(cells.get(column, "") for column in SCOPE_COLUMNS))
    return decision.kept, decision.reason


def test_the_rule_per_provider_column_by_column():
    aws = Scope(provider_slug="aws-bedrock", provider_name="AWS Bedrock")
    # FOCUS 1.0's ProviderName; an Oracle row of a multi-cloud export is another provider's, whatever its service.
    assert decide(aws, ProviderName="Oracle", ServiceName="Generative AI", ServiceSubcategory="Generative AI") == (
        False,
        "another provider",
    )
    # FOCUS 1.3: a Marketplace model sold by Anthropic, hosted and invoiced by AWS, is the AWS account's.
    assert decide(
        aws,
        ServiceProviderName="Anthropic",
        HostProviderName="AWS",
        InvoiceIssuerName="AWS",
        ServiceName="Claude Sonnet 4.5 (Amazon Bedrock Edition)",
    ) == (True, "")
    assert decide(
        aws,
        ProviderName="AWS",
        ServiceCategory="AI and Machine Learning",
        ServiceName="Amazon SageMaker",
        ConsumedUnit="Hours",
    ) == (False, "not LLM inference")
    assert decide(
        aws,
        ProviderName="AWS",
        ServiceName="Amazon Bedrock",
        ChargeCategory="Purchase",
        x_UsageType="USE1-ProvisionedThroughput-ModelUnits",
    ) == (True, "")
    azure = Scope(provider_slug="azure-openai")
    assert decide(
        azure, ProviderName="Microsoft", ServiceName="Cognitive Services", x_SkuMeterSubcategory="Azure OpenAI"
    ) == (True, "")
    assert decide(azure, ProviderName="Microsoft", ServiceName="Foundry Models") == (True, "")
    assert decide(
        azure, ProviderName="Microsoft", ServiceName="Azure AI Search", ServiceCategory="AI and Machine Learning"
    ) == (False, "not LLM inference")
    gcp = Scope(provider_slug="gcp-vertex")
    assert decide(
        gcp,
        ProviderName="Google Cloud",
        ServiceName="Claude Sonnet 4.5",
        PublisherName="Anthropic",
        ServiceCategory="AI and Machine Learning",
        ConsumedUnit="Tokens",
    ) == (True, "")
    assert decide(gcp, ProviderName="Google Cloud", ServiceName="Gemini API") == (True, "")
    assert decide(gcp, ProviderName="AWS", ServiceName="Amazon Bedrock") == (False, "another provider")
    # A vendor's own FOCUS file: its rows are kept, another vendor's booked as theirs, an unknown name left out.
    openai = Scope(provider_slug="openai", provider_name="OpenAI")
    assert decide(openai, ProviderName="OpenAI", ServiceName="OpenAI API") == (True, "")
    assert decide(openai, ProviderName="Groq", ServiceName="Groq") == (True, "")
    assert decide(openai, ProviderName="Solora AI") == (False, "another provider")
    assert decide(openai, ProviderName="AWS", ServiceName="Amazon EC2") == (False, "not LLM inference")
