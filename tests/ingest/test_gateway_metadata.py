"""The gateway column reader's `metadata` (ingest/connectors/gateway/metadata.py) against the record reader's
json.loads: parsed once per distinct text of a batch, or text by text, every field reads as gateway/log.py reads
it, on LiteLLM's own shapes and on JSON written every legal way (escapes, reordered keys, spaces, null parents, a
field's name nested elsewhere); what Arrow cannot read exactly (a key twice) declines, and the record reader reads it.
"""

import csv
import datetime as dt
import io
import json
import random

import pytest

from ingest.connectors.base import BatchDeclined
from ingest.connectors.gateway import metadata as gateway_metadata
from ingest.connectors.gateway.log import GatewayLog
from tests.ingest.test_gateway_columns import HEADER, by_rows, same_lines

# As LiteLLM's proxy writes a spend log's metadata (litellm/proxy/spend_tracking: StandardLoggingMetadata, the
# usage object, additional_usage_values), then the same fields written every other way JSON allows.
LITELLM = json.dumps(
    {
        "batch_models": None,
        "usage_object": {
            "completion_tokens": 5,
            "prompt_tokens": 100,
            "total_tokens": 105,
            "completion_tokens_details": None,
            "prompt_tokens_details": {"audio_tokens": None, "cached_tokens": 12},
        },
        "user_api_key": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",
        "user_api_key_alias": "prod-key",
        "user_api_key_team_id": "team-a",
        "user_api_key_user_id": "u-1",
        "user_api_key_team_alias": "Team A",
        "user_api_key_org_id": None,
        "applied_guardrails": [],
        "mcp_tool_call_metadata": None,
        "model_map_information": {"model_map_key": "gpt-4o", "model_map_value": {"max_tokens": 16384}},
        "additional_usage_values": {"prompt_tokens_details": {"cached_tokens": 12}, "cache_read_input_tokens": 3},
        "requester_ip_address": "10.0.0.1",
        "status": "success",
        "error_information": {"error_code": "", "error_class": "", "llm_provider": ""},
    }
)
METADATA = (
    "",
    "null",
    "  {}  ",
    LITELLM,
    '{"usage_object": {"prompt_tokens_details": {"cached_tokens": 3}}}',
    '{ "usage_object" :{"prompt_tokens_details":{ "cached_tokens":3 } } }',  # the same, spaced otherwise
    '{"user_api_key_alias": "a\\u0041\\"q", "usage_object": {"prompt_tokens": 50, "prompt_tokens_details": '
    '{"cached_tokens": 0}}}',
    '{"usage_object": null, "additional_usage_values": {"cache_read_input_tokens": 4, '
    '"cache_creation_input_tokens": 2}}',
    '{"usage_object": {"prompt_tokens_details": null, "prompt_cache_hit_tokens": 7}}',
    '{"other": {"user_api_key_alias": "nested", "cached_tokens": 90}, "user_api_key_team_id": "t\\"q"}',
    '{"usage_object": {"cache_creation_input_tokens": 5, "prompt_tokens_details": {"cache_creation_tokens": 9, '
    '"cached_tokens": 1}}}',
    '{"status_code": "500", "status": "failure", "user_api_key_hash": "h\\u00e9"}',
    '{"user_api_key_alias": "clé-é", "spend_logs_metadata": null, "user_api_key_user_id": null}',
    '{"additional_usage_values": {"prompt_tokens_details": {"cache_write_tokens": 6}}, "usage_object": {}}',
)


def spend_log(metadata: list[str], *, seed: int) -> bytes:
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER.split(","))
    for n, meta in enumerate(metadata):
        start = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC) + dt.timedelta(seconds=n * 7)
        writer.writerow(
            [
                n,
                start.strftime("%Y-%m-%d %H:%M:%S.%f"),
                (start + dt.timedelta(milliseconds=rng.randrange(1, 9000))).strftime("%Y-%m-%d %H:%M:%S.%f"),
                "",
                rng.choice(("gpt-4o", "claude-sonnet-4")),
                rng.choice(("openai", "anthropic")),
                100,
                rng.randrange(0, 50),
                "0.1",
                rng.choice(("", "k1", "k2")),
                rng.choice(("", "t-cell")),
                rng.choice(("", "u-cell")),
                meta,
                rng.choice(("", '["prod"]')),
                "success",
            ]
        )
    return out.getvalue().encode()


@pytest.mark.parametrize("shared", [0.0, 1.0])  # text by text; once per distinct text
def test_metadata_read_once_per_distinct_text_or_text_by_text_reads_as_json_loads(shared, monkeypatch):
    monkeypatch.setattr(gateway_metadata._Metadata, "SHARED", shared)
    rng = random.Random(8)
    texts = [rng.choice(METADATA) for _ in range(3000)]
    lines = same_lines(spend_log(texts, seed=8))  # raises if the column reader declined
    assert sum(line.requests for line in lines) == 3000
    tags = {line.tags.get("key_alias") for line in lines}
    assert {"prod-key", 'aA"q', "clé-é"} <= tags and "nested" not in tags  # a nested field of that name is not it
    assert {line.user_ref for line in lines} >= {"u-1", "u-cell"}
    assert sum(line.cached_input_tokens for line in lines) > 0 and sum(line.cache_write_tokens for line in lines) > 0


def test_batches_switch_between_distinct_texts_and_text_by_text_and_read_alike(monkeypatch):
    """Batches where nearly every text differs (skipped for PROBE batches), then batches that repeat them."""
    monkeypatch.setattr(gateway_metadata._Metadata, "PROBE", 2)
    monkeypatch.setattr("ingest.connectors.gateway.columns.BLOCK_BYTES", 1 << 15)
    rng = random.Random(9)
    varied = [
        json.dumps({"usage_object": {"prompt_tokens": n, "prompt_tokens_details": {"cached_tokens": n % 40}}})
        for n in range(1500)
    ]
    texts = varied + [rng.choice(METADATA) for _ in range(1500)] + varied[:700]
    lines = same_lines(spend_log(texts, seed=9))
    assert sum(line.requests for line in lines) == len(texts)


def test_a_key_written_twice_declines_and_the_record_reader_reads_the_file():
    """json.loads keeps a repeated key's last value; Arrow's reader refuses the row, so the file goes by rows."""
    data = spend_log([METADATA[4], '{"user_api_key_alias": "first", "user_api_key_alias": "second"}'], seed=10)
    with pytest.raises(BatchDeclined):
        GatewayLog.column_groups(io.BytesIO(data), file_name="log.csv")
    assert "second" in {line.tags.get("key_alias") for line in by_rows(data)}
