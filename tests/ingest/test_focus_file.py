"""FOCUS 1.0 / 1.2 / 1.3 Cost-and-Usage exports (ingest/connectors/focus/file.py).

Fixtures follow reference/provider-formats.md: an AWS "FOCUS 1.0 with AWS columns" Bedrock export, an Azure
FOCUS 1.2 export with Microsoft x_ columns, a GCP Vertex FOCUS 1.3 export, and the FOCUS working-draft
per-token AI API example. Containers (gzip, Parquet), errors and memory: test_focus_file_containers.py.
"""

import datetime as dt
from decimal import Decimal

import pytest

from finops.core.modelids import normalise_model

from .focus_file_helpers import UTC, focus_csv, one_row, parse_bytes, parse_file

# --- AWS Bedrock (FOCUS 1.0 with AWS columns) ---


def test_a_bedrock_export_yields_one_row_per_focus_row_with_exact_billed_costs():
    rows = parse_file("aws_bedrock_focus_1_0.csv")

    assert [row.cost for row in rows] == [
        Decimal("0.057189"),
        Decimal("0.0375"),
        Decimal("0.03"),
        Decimal("1.79"),
        Decimal("0.174"),
        Decimal("4.5"),
        Decimal("4.5"),
        Decimal("0.2"),
        Decimal("2.304"),
        Decimal("1.23"),
        Decimal("-5.00"),
    ]
    assert all(isinstance(row.cost, Decimal) for row in rows)
    assert {row.currency for row in rows} == {"USD"}
    assert sum(row.cost for row in rows) == Decimal("9.822689")
    assert rows[0].source_ref == "aws_bedrock_focus_1_0.csv line 2"
    assert rows[-1].source_ref == "aws_bedrock_focus_1_0.csv line 12"


def test_bedrock_usage_types_give_the_model_the_token_direction_and_the_tier():
    rows = parse_file("aws_bedrock_focus_1_0.csv")

    seen = [
        (
            r.tags["meter"],
            r.model_raw,
            r.input_tokens,
            r.cached_input_tokens,
            r.cache_write_tokens,
            r.output_tokens,
            r.service_tier,
        )
        for r in rows[:8]
    ]
    assert seen == [
        ("USW2-Claude4.6Sonnet-input-tokens", "claude-sonnet-4-6", 17_330, 0, 0, 0, ""),
        ("USW2-Claude4.6Sonnet-output-tokens", "claude-sonnet-4-6", 0, 0, 0, 2_500, ""),
        ("USW2-Claude4.6Sonnet-cache-read-input-token-count", "claude-sonnet-4-6", 0, 100_000, 0, 0, ""),
        ("USE1-Claude4Sonnet-cache-write-input-token-count-1-hour", "claude-sonnet-4", 0, 0, 433_893, 0, ""),
        ("USE1-Llama4-Maverick-17B-input-tokens-batch", "llama4-maverick-17b", 1_200_000, 0, 0, 0, "batch"),
        ("USE1-MP:USE1_InputTokenCount-Units", "claude-sonnet-4-5", 1_500_000, 0, 0, 0, ""),
        ("USW2-MP:USW2_output_tokens_global_standard-Units", "claude-sonnet-4-5", 0, 0, 0, 300_000, ""),
        (
            "USE1-mistral.voxtral-small-24b-2507-mantle-input-tokens-standard",
            "mistral.voxtral-small-24b-2507",
            2_000_000,
            0,
            0,
            0,
            "",
        ),
    ]
    assert {row.provider_slug for row in rows[:8]} == {"aws-bedrock"}


def test_marketplace_models_sold_through_bedrock_count_as_bedrock_spend():
    marketplace = parse_file("aws_bedrock_focus_1_0.csv")[5]

    assert marketplace.provider_slug == "aws-bedrock"
    assert marketplace.tags["x_ServiceCode"] == "8x2yq7abcd1234efgh5678ijkl"
    assert marketplace.model_raw == "claude-sonnet-4-5"


def test_aws_lines_that_are_not_bedrock_keep_the_account_provider_and_carry_no_tokens():
    """Read without an account's scope (an import leaves EC2 out: test_focus_cloud_scope.py)."""
    ec2 = parse_file("aws_bedrock_focus_1_0.csv")[8]

    assert ec2.provider_slug == ""
    assert ec2.model_raw == ""  # no model: the usage type is no model name (it stays in the meter tag)
    assert ec2.tags["meter"] == "USE1-BoxUsage:m5.large"
    assert (ec2.input_tokens, ec2.output_tokens, ec2.cost) == (0, 0, Decimal("2.304"))


def test_tax_and_credit_rows_keep_their_signed_cost_and_a_lower_case_category():
    rows = parse_file("aws_bedrock_focus_1_0.csv")

    assert [row.charge_category for row in rows] == ["usage"] * 9 + ["tax", "credit"]
    tax, credit = rows[9], rows[10]
    assert (tax.cost, tax.model_raw, tax.provider_slug) == (Decimal("1.23"), "", "aws-bedrock")
    assert (credit.cost, credit.model_raw) == (Decimal("-5.00"), "")
    assert credit.period_start == dt.datetime(2026, 3, 1, tzinfo=UTC)
    assert credit.period_end == dt.datetime(2026, 4, 1, tzinfo=UTC)


def test_every_row_names_its_billing_period_and_its_utc_charge_period():
    rows = parse_file("aws_bedrock_focus_1_0.csv")

    assert {(row.billing_period_start, row.billing_period_end) for row in rows} == {
        (dt.datetime(2026, 3, 1, tzinfo=UTC), dt.datetime(2026, 4, 1, tzinfo=UTC))
    }
    assert rows[0].period_start == dt.datetime(2026, 3, 14, tzinfo=UTC)
    assert rows[0].period_end == dt.datetime(2026, 3, 15, tzinfo=UTC)
    assert rows[0].period_start.utcoffset() == dt.timedelta(0)


def test_nulls_in_mandatory_columns_that_aws_leaves_empty_are_tolerated():
    first = parse_file("aws_bedrock_focus_1_0.csv")[0]  # InvoiceIssuerName and PublisherName are empty

    assert first.project_ref == "123456789012"
    assert first.tags == {
        "user_team": "search",
        "user_env": "prod",
        "x_Operation": "InvokeModelInference",
        "x_ServiceCode": "AmazonBedrock",
        "meter": "USW2-Claude4.6Sonnet-input-tokens",
        "resource": "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/abc123",
    }


# --- Azure OpenAI (FOCUS 1.2 with Microsoft columns) ---


def test_azure_meter_names_give_the_model_and_the_token_direction():
    rows = parse_file("azure_openai_focus_1_2.csv")

    seen = [
        (r.tags.get("meter"), r.model_raw, r.input_tokens, r.cached_input_tokens, r.output_tokens) for r in rows[:4]
    ]
    assert seen == [
        ("gpt-4o 1120 Inp glbl Tokens", "gpt-4o-1120", 12_345_678, 0, 0),
        ("gpt-4o 1120 Outp glbl Tokens", "gpt-4o-1120", 0, 0, 2_000_500),
        ("gpt 4o 1120 cached Inp glbl Tokens", "gpt-4o-1120", 0, 250_000, 0),
        ("GPT 5 outpt Glbl 1M Tokens", "gpt-5", 0, 0, 1_500_000),
    ]
    assert {row.provider_slug for row in rows} == {"azure-openai"}


def test_azure_costs_stay_in_the_billing_currency_and_credits_are_negative():
    rows = parse_file("azure_openai_focus_1_2.csv")

    assert {row.currency for row in rows} == {"EUR"}
    assert [row.cost for row in rows] == [
        Decimal("30.864195"),
        Decimal("20.005"),
        Decimal("0.3125"),
        Decimal("15"),
        Decimal("1.68"),
        Decimal("-12.5"),
    ]
    assert rows[-1].charge_category == "credit"


def test_azure_brace_less_tags_and_times_without_seconds_are_read():
    first = parse_file("azure_openai_focus_1_2.csv")[0]

    assert first.period_start == dt.datetime(2025, 11, 14, tzinfo=UTC)
    assert first.tags["team"] == "search" and first.tags["env"] == "prod"
    assert first.tags["x_ResourceGroupName"] == "rg-ai" and first.tags["x_CostCenter"] == "CC-520"
    assert "x_SomethingNew" not in first.tags and "x_BilledCostInUsd" not in first.tags
    assert first.project_ref == "/subscriptions/00000000-0000-0000-0000-000000000001"


def test_an_azure_meter_that_is_not_tokens_keeps_its_cost_and_no_tokens():
    hosting = parse_file("azure_openai_focus_1_2.csv")[4]

    assert hosting.model_raw == ""  # a line without a model, never the meter's words
    assert hosting.tags["meter"] == "Standard Fine-tuned Model Hosting"
    assert (hosting.input_tokens, hosting.output_tokens, hosting.cost) == (0, 0, Decimal("1.68"))


# --- GCP Vertex AI (FOCUS 1.3) ---


def test_vertex_skus_give_the_gemini_model_and_direction_even_with_their_leading_space():
    rows = parse_file("gcp_vertex_focus_1_3.csv")

    seen = [(r.model_raw, r.input_tokens, r.cached_input_tokens, r.output_tokens) for r in rows[:4]]
    assert seen == [
        ("gemini-2.5-flash", 4_047_666, 0, 0),
        ("gemini-2.5-flash", 0, 0, 150_000),  # "Text Output (Thinking On) - Predictions", quantity 1.5E5
        ("gemini-2.5-flash-lite", 0, 250_000, 0),  # " Gemini 2.5 Flash Lite Input Text Caching"
        ("claude-sonnet-4-5", 0, 0, 20_000),  # Claude on Vertex
    ]
    assert {row.provider_slug for row in rows} == {"gcp-vertex"}
    assert {row.currency for row in rows} == {"USD"}  # "usd" in the file


def test_vertex_projects_come_from_sub_account_or_the_x_project_column():
    rows = parse_file("gcp_vertex_focus_1_3.csv")

    assert rows[0].project_ref == "acme-prod-123"
    assert rows[3].project_ref == "acme-batch-456"
    assert rows[0].tags == {"team": "search", "goog-vertex-endpoint": "", "meter": rows[0].tags["meter"]}


def test_cache_storage_token_hours_are_not_token_counts_but_keep_their_cost():
    storage = parse_file("gcp_vertex_focus_1_3.csv")[4]

    assert storage.tags["meter"] == "Gemini 2.5 Flash Context Cache Storage"
    assert storage.input_tokens + storage.cached_input_tokens + storage.cache_write_tokens + storage.output_tokens == 0
    assert storage.cost == Decimal("0.001")


def test_an_adjustment_correction_and_a_tax_row_are_kept_with_their_category():
    rows = parse_file("gcp_vertex_focus_1_3.csv")

    correction, tax = rows[5], rows[6]
    assert (correction.charge_category, correction.cost, correction.tags["charge_class"]) == (
        "adjustment",
        Decimal("-0.05"),
        "correction",
    )
    assert correction.input_tokens == 0  # a correction without a quantity changes money, not tokens
    assert (tax.charge_category, tax.cost, tax.model_raw) == ("tax", Decimal("0.12"), "")


# --- the FOCUS AI draft: SkuPriceDetails ---


def test_sku_price_details_carry_the_model_and_the_token_direction():
    rows = parse_file("per_token_api_focus_1_3.csv")

    seen = [(r.model_raw, r.input_tokens, r.cached_input_tokens, r.cache_write_tokens, r.output_tokens) for r in rows]
    assert seen == [
        ("solora-saturn-4.8", 8_400_000, 0, 0, 0),  # TokenDirection Input, TokenCacheAction Uncached
        ("solora-saturn-4.8", 0, 0, 0, 500_000),  # TokenDirection Output
        ("solora-saturn-4.8", 0, 1_000_000, 0, 0),  # TokenType CacheRead
        ("solora-saturn-4.8", 0, 0, 200_000, 0),  # TokenCacheAction Write
        ("solora-saturn-4.8", 0, 0, 0, 0),  # Context Cache Storage (Token-Hours)
    ]
    assert rows[0].cost == Decimal("42.00")
    assert rows[0].provider_slug == ""  # an unknown vendor: the account's provider
    assert (rows[0].api_key_ref, rows[0].user_ref) == ("key_01SOLORAPERSON1", "person1@example.com")
    assert rows[0].billing_period_start == dt.datetime(2025, 5, 1, tzinfo=UTC)


# --- units, directions, providers, amounts ---


@pytest.mark.parametrize(
    "quantity, unit, expected",
    [
        ("30", "Tokens", 30),
        ("17.33", "1K tokens", 17_330),
        ("8.4", "1000 Tokens", 8_400),
        ("2", "1M tokens", 2_000_000),
        ("8.40", "1000000 Tokens", 8_400_000),
        ("0.25", "1M", 250_000),
        ("12.5", "1K", 12_500),
        ("3", "Units", 3),
        ("0.0004", "1K tokens", 0),  # 0.4 of a token rounds half-up to a whole count
        ("0.0005", "1K tokens", 1),
    ],
)
def test_token_counts_are_the_consumed_quantity_times_the_unit_block(quantity, unit, expected):
    row = one_row(ConsumedQuantity=quantity, ConsumedUnit=unit)

    assert row.input_tokens == expected


def test_the_pricing_quantity_is_used_when_the_consumed_quantity_is_null():
    row = one_row(ConsumedQuantity="", ConsumedUnit="", PricingQuantity="0.03", PricingUnit="1000000 Tokens")

    assert row.input_tokens == 30_000


@pytest.mark.parametrize(
    "meter, field",
    [
        ("Input Tokens", "input_tokens"),
        ("Output Tokens", "output_tokens"),
        ("Cache Read Input Tokens", "cached_input_tokens"),
        ("Cache Write Input Tokens", "cache_write_tokens"),
        ("o4-mini 0416 Inp glbl Tokens", "input_tokens"),
        ("5.4 opt Gl 1M Tokens", "output_tokens"),
        ("gpt 4.1 nano cached Inp glbl Tokens", "cached_input_tokens"),
        ("Phi-4-Input Tokens", "input_tokens"),
        ("Gemini 2.5 Flash GA Thinking Text Output - Predictions", "output_tokens"),
        ("USE1-Claude4.6Opus-cache-read-input-token-count-cross-region-global", "cached_input_tokens"),
        ("USW2-anthropic.claude-opus-4-8-mantle-cache-write-tokens-global-standard", "cache_write_tokens"),
        ("USE2-MP:USE2_CacheWriteInputTokenCount-Units", "cache_write_tokens"),
        ("USW2-MP:USW2_cache_read_tokens_standard-Units", "cached_input_tokens"),
    ],
)
def test_the_token_direction_is_read_from_the_meter(meter, field):
    row = one_row(SkuMeter=meter, ConsumedQuantity="7", ConsumedUnit="Tokens")

    counts = {
        f: getattr(row, f) for f in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")
    }
    assert counts == {f: (7 if f == field else 0) for f in counts}


def test_a_model_and_direction_are_read_from_a_charge_description_like_model_comma_direction():
    row = one_row(SkuMeter=None, ChargeDescription="gpt-4o-mini-2024-07-18, input", ConsumedQuantity="30")

    assert (row.model_raw, row.input_tokens) == ("gpt-4o-mini-2024-07-18", 30)


@pytest.mark.parametrize(
    "names, service, expected",
    [
        ({"ProviderName": "AWS"}, "Amazon Bedrock", "aws-bedrock"),
        ({"ProviderName": "AWS"}, "Amazon Simple Storage Service", ""),
        (
            {"ProviderName": None, "ServiceProviderName": "Anthropic", "HostProviderName": "Amazon Web Services"},
            "Amazon Bedrock",
            "aws-bedrock",
        ),
        ({"ProviderName": "Microsoft"}, "Azure OpenAI Service", "azure-openai"),
        ({"ProviderName": "Google Cloud"}, "Vertex AI", "gcp-vertex"),
        ({"ProviderName": "OpenAI"}, "OpenAI API", "openai"),
        ({"ProviderName": None, "ServiceProviderName": "Anthropic"}, "Claude API", "anthropic"),
        ({"ProviderName": "Solora AI"}, "Solora API", ""),
    ],
)
def test_provider_names_map_to_our_provider_slugs(names, service, expected):
    row = one_row(ServiceName=service, **names)

    assert row.provider_slug == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("375E-4", Decimal("0.0375")),
        ("4.5E-7", Decimal("0.00000045")),
        ("0.000004500000000000000000000000000000000", Decimal("0.0000045")),
        ("-12", Decimal("-12")),
    ],
)
def test_billed_costs_are_exact_decimals_including_scientific_notation(text, expected):
    row = one_row(BilledCost=text)

    assert isinstance(row.cost, Decimal)
    assert row.cost == expected
    assert str(row.cost) == str(Decimal(text))  # every digit as given, never through a float


def test_column_order_is_free_and_snake_case_or_lower_case_headers_are_accepted():
    text = (
        "charge_period_end,billed_cost,SKUMETER,chargecategory,billing_currency,ChargePeriodStart,consumed_quantity,"
        "consumed_unit,x_ignored_column\n"
        "2026-03-15T00:00:00Z,0.25,Output Tokens,Usage,usd,2026-03-14T00:00:00Z,100,Tokens,whatever\n"
    )
    (row,) = parse_bytes(text.encode(), "athena.csv")

    assert (row.cost, row.currency, row.output_tokens) == (Decimal("0.25"), "USD", 100)
    assert row.billing_period_start is None  # optional: absent columns are tolerated


def test_a_utf8_bom_and_blank_optional_values_are_tolerated():
    data = b"\xef\xbb\xbf" + focus_csv({"SkuMeter": "Input Tokens", "ProviderName": "", "ServiceName": ""})
    (row,) = parse_bytes(data, "bom.csv")

    assert row.input_tokens == 1000


@pytest.mark.parametrize(
    "description, meter, model, field",
    [
        (
            "amazon.nova-lite-v1:0 cache-read-input tokens",
            "Cache Read Input Tokens",
            "nova-lite",
            "cached_input_tokens",
        ),
        (
            "us.amazon.nova-pro-v1:0 cache-write-input tokens",
            "Cache Write Input Tokens",
            "nova-pro",
            "cache_write_tokens",
        ),
        (
            "amazon.nova-micro-v1:0-cache-read-input-tokens",
            "Cache Read Input Tokens",
            "nova-micro",
            "cached_input_tokens",
        ),
        ("meta.llama3-3-70b-instruct-v1:0 output tokens", "Output Tokens", "llama3-3-70b-instruct", "output_tokens"),
        (
            "anthropic.claude-sonnet-4-5-20250929-v1:0 cache-read-input tokens",
            "Cache Read Input Tokens",
            "claude-sonnet-4-5",
            "cached_input_tokens",
        ),
    ],
)
def test_the_meter_says_what_the_tokens_are_and_the_model_id_never_carries_a_token_class(
    description, meter, model, field
):
    """issue 15: a Bedrock line described as `amazon.nova-lite-v1:0 cache-read-input tokens` once landed as a model
    named `nova-lite-v1:0-cache-read`, while the same line for a Claude model landed as Claude's cached input."""
    row = one_row(
        ProviderName="AWS",
        ServiceName="Amazon Bedrock",
        SkuMeter=meter,
        ChargeDescription=description,
        ConsumedQuantity="9",
        ConsumedUnit="Tokens",
    )

    assert normalise_model(row.model_raw) == model
    counts = {
        f: getattr(row, f) for f in ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")
    }
    assert counts == {f: (9 if f == field else 0) for f in counts}
