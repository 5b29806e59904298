"""Gateway request logs → hourly UsageRows, for providers with no usage API (Groq, Cerebras, Moonshot …).

reference/provider-formats.md §6: for Groq, Cerebras, DeepInfra and Moonshot the realistic source is self-metering,
i.e. the `usage` of every response recorded by a gateway, priced with the catalog and reconciled against invoices.

Formats, told from the content (not the file name):

(a) LiteLLM `GET /spend/logs?summarize=false` (a JSON array of `LiteLLM_SpendLogs` objects) or `/spend/logs/v2`
    (`{"data": [...], "total": …}`). The JSON is read incrementally (one record at a time), so a large export
    is never held whole. The summarised `/spend/logs` output (per-day `spend`/`users`/`models`, no tokens) is
    refused: it cannot be split into hours or token classes.
(b) a CSV export of the `LiteLLM_SpendLogs` table: request_id, startTime, endTime, completionStartTime, model,
    custom_llm_provider, prompt_tokens, completion_tokens, spend, api_key, team_id, user, metadata (JSON),
    request_tags (JSON array) — extra columns are ignored.
(c) OpenAI-compatible JSONL: one response object per line (`usage.prompt_tokens`, `usage.completion_tokens`,
    `usage.prompt_tokens_details.cached_tokens`, `created`, `model`), flat or wrapped as
    `{"response": {...}, "metadata": {...}}`, with optional `start_time`/`end_time`/`first_token_time`,
    `provider`, `api_key`, `user`, `team_id`, `tags`. LiteLLM logging payloads (JSONL from a logging callback)
    are read as (a).

Tokens. LiteLLM and OpenAI report `prompt_tokens` cache-inclusive (LiteLLM adds Anthropic's cache reads and
writes into it), so uncached input = prompt_tokens − cached − cache writes; cached reads come from
`prompt_tokens_details.cached_tokens` (or `cache_read_input_tokens`), writes from `cache_creation_input_tokens`.
A LiteLLM record carries them in `metadata.usage_object` or, when that is null, in
`metadata.additional_usage_values` (gateway_values.CACHE_READS / CACHE_WRITES: every place, in order).
Caches larger than prompt_tokens are an error, not a guess. Anthropic-native usage (`input_tokens` plus
`cache_*_input_tokens`, no `prompt_tokens`) is disjoint and read as such.

LiteLLM's own cache. A record with `cache_hit` "True" was answered by the gateway from its cache (spend 0): no
provider served or billed it. Its hour-group is kept apart (charge category GATEWAY_CACHE_HIT, no latency), with
the tokens a provider would have billed: the writer stores it as a cache hit, never as provider usage.

Cost. LiteLLM's `spend` is the gateway's own estimate from its bundled price map, not what the provider bills;
the reference's guidance is to price self-metered usage from the catalog and reconcile against invoices. So
every row has cost=None (the product prices it from the catalog and marks it estimated, or unpriced);
`spend` is not read.

Aggregation. One UsageRow per UTC hour (of startTime / created) × provider × model × api key × user × tags (team_id,
key/team alias, end_user, request tags, LiteLLM `spend_logs_metadata`). requests = number of records (failed ones
included: they were requests). latency = the hour's finops.performance.measures.Performance (issue 12): requests, errors
(LiteLLM `status` "failure", an HTTP `status_code` ≥ 400 or an `error` object), and mergeable distributions
(1 % relative error) of end-to-end latency and time to first token over the records that carry an end time (or a
duration): duration = end − start; time to first token = completionStartTime − start (clamped to [0, duration]),
or the whole duration when there is no first-token time (LiteLLM itself sets completionStartTime = endTime for
non-streamed calls). Output speed counts output tokens over generation time (end − first token) of streamed
records, and over the whole duration of every timed record (the end-to-end figure).

Memory. Records are read one at a time, but the hourly groups are kept until the end of the file: memory grows
with the number of distinct hour-groups (bounded per group: a few hundred distribution buckets at most), not with
the number of records.

Speed. A LiteLLM_SpendLogs CSV is read as columns (gateway/columns.py: pyarrow and numpy, the same groups, lines
and Performance JSON as this module's record-by-record reading, ~5× faster), and on Postgres written as columns
too (`parse_lines`, ingest/columnar_gateway.py); what it cannot read exactly it declines, and the file is read here
record by record. JSON and JSONL are always read here. The decision and its
reasons: gateway/columns.py's docstring and docs/ingestion.md. Raw `sk-…` keys found in a log are replaced by their
SHA-256 (what
LiteLLM itself stores), so a secret never reaches the database.
"""

import datetime as dt
import logging

from finops.performance.measures import Performance
from ingest.connectors.base import GATEWAY_CACHE_HIT, BatchDeclined, ProviderError, UsageRow
from ingest.connectors.gateway.columns import GatewayLines, column_groups, column_lines
from ingest.connectors.gateway.fields import (
    count_of,
    first_count,
    json_field,
    key_ref,
    number_of,
    parse_time,
    provider_slug,
    request_tags,
    tag_dict,
    tag_list,
    text_of,
)
from ingest.connectors.gateway.records import records
from ingest.connectors.gateway.values import CACHE_READS, CACHE_WRITES
from ingest.connectors.text_input import utf8_text

log = logging.getLogger(__name__)

HOUR = dt.timedelta(hours=1)


class GatewayLog:
    # Log exports are cut at arbitrary times: an import replaces the hours it has lines for, not whole days,
    # so two files of one day (morning, afternoon) do not erase each other.
    replace_granularity = "hour"
    kind = "gateway_log"

    def parse(self, stream, *, file_name: str, columns: bool = True):
        """A LiteLLM_SpendLogs CSV is read as columns (gateway/columns.py) when the stream can be read again;
        whatever the column reader declines, and every JSON shape, is read record by record (and so is everything
        when `columns` is false: what the column path declined). Both make the same hourly groups, and nothing is
        yielded before the whole file is read, so a decline leaves nothing behind."""
        groups = None
        if columns and _rereadable(stream):
            try:
                groups = self.column_groups(stream, file_name=file_name)
            except BatchDeclined as declined:
                log.info("%s read record by record (%s)", file_name, declined)
                stream.seek(0)
        if groups is None:
            groups = self.row_groups(stream, file_name=file_name)
        yield from groups.rows()

    def parse_lines(self, stream, *, file_name: str) -> GatewayLines:
        """The hourly lines as columns, for the gateway column writer (ingest/columnar_gateway.py, Postgres, a stream
        that can be read again); BatchDeclined for what only the record reader reads exactly (then
        `parse(…, columns=False)`)."""
        return self.column_lines(stream, file_name=file_name)

    @staticmethod
    def column_lines(stream, *, file_name: str) -> GatewayLines:
        return column_lines(
            stream,
            file_name=file_name,
            interpret=_litellm_request,
            identify=IDENTIFY,
        )

    @staticmethod
    def row_groups(stream, *, file_name: str) -> "_Groups":
        text = utf8_text(stream)
        try:
            return request_groups(records(text, file_name))
        except UnicodeDecodeError as exc:
            raise ProviderError(f"{file_name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None

    @staticmethod
    def column_groups(stream, *, file_name: str) -> "_Groups":
        """The column reader's groups; raises BatchDeclined for what only the row reader reads exactly."""
        groups = _Groups()
        for key, line, totals, performance in column_groups(
            stream,
            file_name=file_name,
            interpret=_litellm_request,
            identify=IDENTIFY,
        ):
            groups.put(key, f"{file_name} line {line}", totals, performance)
        return groups


def _rereadable(stream) -> bool:
    try:
        return stream.seekable() and stream.tell() == 0
    except (AttributeError, OSError, ValueError):
        return False


def request_groups(located_records, *, refuse=None) -> "_Groups":
    """(where, record) pairs → their hourly groups, whose `.rows()` are the UsageRows: what a log file and a live
    LiteLLM pull (litellm_api/api.py) share, so the same records make the same lines however they arrive.

    A record that cannot be read raises `refuse(where, why)` (default: a ProviderError of bad input)."""
    groups = _Groups()
    for where, record in located_records:
        try:
            groups.add(_request(record), where)
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise (refuse or _bad_record)(where, str(exc)) from None
    return groups


def _bad_record(where: str, why: str) -> ProviderError:
    return ProviderError(f"{where}: {why}")


class _Request:
    __slots__ = (
        "start",
        "end",
        "first_token",
        "provider",
        "model",
        "input",
        "cached",
        "cache_write",
        "output",
        "api_key",
        "user",
        "tags",
        "failed",
        "cache_hit",
    )


def _request(record: dict) -> _Request:
    if isinstance(record.get("models"), dict) and "prompt_tokens" not in record:
        raise ValueError(
            "this is the summarised /spend/logs output (spend per day, no tokens); "
            "export per-request logs with /spend/logs?summarize=false or /spend/logs/v2"
        )
    # LiteLLM records carry prompt_tokens at the top (their stored `response` may itself hold a `usage`).
    if "prompt_tokens" in record:
        return _litellm_request(record)
    response = record.get("response") if isinstance(record.get("response"), dict) else {}
    if isinstance(record.get("usage"), dict) or isinstance(response.get("usage"), dict):
        return _openai_request(record)
    keys = ", ".join(sorted(map(str, record))[:8])
    raise ValueError(
        f"unknown record shape (keys {keys}): neither prompt_tokens (LiteLLM) nor a usage object (OpenAI-compatible)"
    )


def _litellm_request(record: dict) -> _Request:
    metadata = json_field(record.get("metadata"), "metadata", dict)
    request = _Request()
    request.start = parse_time(record.get("startTime"), "startTime", required=True)
    request.end = parse_time(record.get("endTime"), "endTime")
    request.first_token = parse_time(record.get("completionStartTime"), "completionStartTime")
    request.model = text_of(record.get("model")) or text_of(record.get("model_group"))
    request.provider = provider_slug(text_of(record.get("custom_llm_provider")), request.model)
    prompt = count_of(record.get("prompt_tokens"), "prompt_tokens", required=True)
    cached = first_count(*_in_metadata(metadata, CACHE_READS), (record, "cache_read_input_tokens"))
    cache_write = first_count(*_in_metadata(metadata, CACHE_WRITES), (record, "cache_creation_input_tokens"))
    _split_input(request, prompt, cached, cache_write, "prompt_tokens")
    # LiteLLM writes str(cache_hit): "True" for a response it served from its own cache (spend 0, no provider call).
    request.cache_hit = text_of(record.get("cache_hit")).lower() == "true"
    request.output = count_of(record.get("completion_tokens"), "completion_tokens", required=True)
    request.api_key, request.user, identity_tags = litellm_identity(
        record.get("api_key"), record.get("user"), record.get("team_id"), metadata
    )
    tags = request_tags(record.get("request_tags"))
    extra = metadata.get("spend_logs_metadata")
    if isinstance(extra, dict):
        tags.update({str(k): text_of(v) for k, v in extra.items() if v is not None and not isinstance(v, (dict, list))})
    for tag, value in (
        ("team_alias", text_of(metadata.get("user_api_key_team_alias"))),
        ("end_user", text_of(record.get("end_user"))),
    ):
        if value:
            tags[tag] = value
    tags.update(identity_tags)  # team_id and key_alias, over any request tag of those names
    request.tags = tags
    request.failed = _failed(record, metadata)
    _check_model(request)
    return request


# The cells litellm_identity reads: the record's own, and metadata's. The column reader interprets the rest of a
# record once per distinct combination of the other cells, and these once per distinct combination of themselves
# (a log of 300 keys × 50 users × 7 teams has nearly a combination per request).
IDENTITY_CELLS = ("api_key", "user", "team_id")
IDENTITY_METADATA = ("user_api_key_hash", "user_api_key_user_id", "user_api_key_team_id", "user_api_key_alias")
# What litellm_identity answers and the cells each answer is read from, apart from the others' cells: the key, the
# user, the team_id tag, the key_alias tag. The column reader reads each part once per distinct value of its own
# cells (a scattered log's 300 keys, 50 users and 7 teams, not their 105,000 combinations), every other identity
# cell empty. tests/ingest/test_gateway_columns.py holds the parts, put together, to the whole answer.
IDENTITY_PARTS = (
    ("api_key", ("api_key", "user_api_key_hash")),
    ("user", ("user", "user_api_key_user_id")),
    ("team_id", ("team_id", "user_api_key_team_id")),
    ("key_alias", ("user_api_key_alias",)),
)


def litellm_identity(api_key, user, team_id, metadata: dict) -> tuple[str, str, dict]:
    """Who sent a LiteLLM record: (api key ref, user, the tags team_id and key_alias where known), from the record's
    api_key, user and team_id cells, else LiteLLM's metadata (IDENTITY_METADATA). Both readers use this function."""
    api_key = key_ref(text_of(api_key) or text_of(metadata.get("user_api_key_hash")))
    user = text_of(user) or text_of(metadata.get("user_api_key_user_id"))
    tags = {}
    team = text_of(team_id) or text_of(metadata.get("user_api_key_team_id"))
    if team:
        tags["team_id"] = team
    alias = text_of(metadata.get("user_api_key_alias"))
    if alias:
        tags["key_alias"] = alias
    return api_key, user, tags


IDENTIFY = (litellm_identity, IDENTITY_CELLS, IDENTITY_METADATA, IDENTITY_PARTS)  # for the column reader


def _in_metadata(metadata: dict, paths) -> list:
    """(object, name) of each path (gateway_values.CACHE_READS …) whose parents are objects in `metadata`."""
    if not any(isinstance(metadata.get(root), dict) for root in _roots(paths)):
        return []  # no first parent is an object: none of the paths leads anywhere (every record of most logs)
    found = []
    for *parents, name in paths:
        holder = metadata
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            found.append((holder, name))
    return found


def _roots(paths) -> tuple:
    """The first parents of `paths`, every path having one (gateway_values' paths all do)."""
    try:
        return _ROOTS[paths]
    except KeyError:
        if any(len(path) < 2 for path in paths):
            raise ValueError("a metadata path without a parent object") from None
        roots = _ROOTS[paths] = tuple(dict.fromkeys(path[0] for path in paths))
        return roots


_ROOTS: dict[tuple, tuple] = {}


def _openai_request(record: dict) -> _Request:
    wrapped = record.get("response")
    response = wrapped if isinstance(wrapped, dict) and isinstance(wrapped.get("usage"), dict) else record
    usage = response["usage"]
    metadata = json_field(record.get("metadata"), "metadata", dict)
    sources = (metadata, record, response)

    def pick(*names):  # metadata first, then the record, then the response
        return next((src[name] for name in names for src in sources if src.get(name) is not None), None)

    request = _Request()
    request.start = parse_time(pick("start_time", "startTime", "request_start", "timestamp"), "start_time")
    if request.start is None:
        request.start = parse_time(response.get("created"), "created", required=True)
    request.end = parse_time(pick("end_time", "endTime"), "end_time")
    if request.end is None:
        duration_ms = pick("latency_ms", "duration_ms")
        total_time = usage.get("total_time")  # Groq: seconds
        if duration_ms is not None:
            request.end = request.start + dt.timedelta(milliseconds=float(number_of(duration_ms, "latency_ms")))
        elif total_time is not None:
            request.end = request.start + dt.timedelta(seconds=float(number_of(total_time, "usage.total_time")))
    first_token = pick("first_token_time", "completion_start_time", "completionStartTime")
    request.first_token = parse_time(first_token, "first_token_time")
    ttft_ms = pick("ttft_ms", "time_to_first_token_ms")
    if request.first_token is None and ttft_ms is not None:
        request.first_token = request.start + dt.timedelta(milliseconds=float(number_of(ttft_ms, "ttft_ms")))
    request.model = text_of(response.get("model"))
    provider = text_of(pick("provider", "custom_llm_provider")) or ("groq" if "x_groq" in response else "")
    request.provider = provider_slug(provider, request.model)

    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    if not isinstance(details, dict):
        raise ValueError("usage.prompt_tokens_details is not an object")
    cached = first_count((details, "cached_tokens"), (usage, "cache_read_input_tokens"))
    cache_write = first_count(
        (usage, "cache_creation_input_tokens"), (details, "cache_write_tokens"), (details, "cache_creation_tokens")
    )
    if "prompt_tokens" in usage:
        prompt = count_of(usage["prompt_tokens"], "usage.prompt_tokens")
        _split_input(request, prompt, cached, cache_write, "usage.prompt_tokens")
        request.output = count_of(usage.get("completion_tokens"), "usage.completion_tokens")
    elif "input_tokens" in usage:
        prompt = count_of(usage["input_tokens"], "usage.input_tokens")
        if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
            # Anthropic-native usage: input_tokens already excludes both caches.
            request.input, request.cached, request.cache_write = prompt, cached, cache_write
        else:  # OpenAI Responses API: input_tokens includes the cached ones
            _split_input(request, prompt, cached, cache_write, "usage.input_tokens")
        request.output = count_of(usage.get("output_tokens"), "usage.output_tokens")
    else:
        raise ValueError("usage has neither prompt_tokens nor input_tokens")

    request.api_key = key_ref(text_of(pick("api_key", "api_key_id", "key")))
    request.user = text_of(pick("user", "user_id"))
    tags = metadata.get("tags", record.get("tags"))
    request.tags = tag_list(tags) if isinstance(tags, list) else tag_dict(tags)
    team = text_of(pick("team_id", "team"))
    if team:
        request.tags["team_id"] = team
    request.failed = _failed(record, metadata) or _failed(response, {})
    request.cache_hit = False
    _check_model(request)
    return request


FAILED_STATUSES = {"failure", "failed", "error", "fail"}


def _failed(record: dict, metadata: dict) -> bool:
    """LiteLLM's `status` ("success" / "failure"), an HTTP `status_code` of 400 or more, or an `error` object."""
    status = text_of(record.get("status") or metadata.get("status")).lower()
    code = record.get("status_code", metadata.get("status_code"))
    error = record.get("error")
    return (
        status in FAILED_STATUSES
        or (code not in (None, "") and text_of(code).isdigit() and int(text_of(code)) >= 400)
        or (error not in (None, "", {}) and error is not False)
    )


def _split_input(request: _Request, all_input: int, cached: int, cache_write: int, name: str) -> None:
    if cached + cache_write > all_input:
        raise ValueError(
            f"cached ({cached}) + cache-write ({cache_write}) tokens exceed {name} ({all_input}), "
            "which counts all input"
        )
    request.input, request.cached, request.cache_write = all_input - cached - cache_write, cached, cache_write


def _check_model(request: _Request) -> None:
    if not request.model and (request.input or request.cached or request.cache_write or request.output):
        raise ValueError("model is empty but the record has tokens")


# --- hourly groups ---


class _Group:
    __slots__ = ("input", "cached", "cache_write", "output", "requests", "first_where", "performance")

    def __init__(self, where: str):
        self.input = self.cached = self.cache_write = self.output = self.requests = 0
        self.first_where, self.performance = where, Performance()


class _Groups:
    def __init__(self):
        self.groups: dict[tuple, _Group] = {}

    def add(self, request: _Request, where: str) -> None:
        hour = request.start.replace(minute=0, second=0, microsecond=0)
        tags = tuple(sorted(request.tags.items()))
        key = (hour, request.provider, request.model, request.api_key, request.user, tags, request.cache_hit)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group(where)
        group.requests += 1
        group.input += request.input
        group.cached += request.cached
        group.cache_write += request.cache_write
        group.output += request.output
        if request.end is not None:
            duration = _ms(request.end - request.start)
            if duration < 0:
                raise ValueError(
                    f"the end time {request.end.isoformat()} is before the start time {request.start.isoformat()}"
                )
            first = request.first_token or request.end
            ttft = min(max(_ms(first - request.start), 0), duration)
        else:
            duration = ttft = None
        group.performance.add_request(
            duration_ms=duration, ttft_ms=ttft, output_tokens=request.output, failed=request.failed
        )

    def put(self, key: tuple, where: str, totals: tuple, performance: Performance) -> None:
        """A whole group, counted elsewhere (the column reader): not built empty first (a Performance each, for
        nothing, when every request is its own group)."""
        group = self.groups[key] = _Group.__new__(_Group)
        group.input, group.cached, group.cache_write, group.output, group.requests = totals
        group.first_where, group.performance = where, performance

    def rows(self):
        for key in sorted(self.groups):
            hour, provider, model, api_key, user, tags, cache_hit = key
            group = self.groups[key]
            # Served from the gateway's own cache: no provider answered or billed it, so it is no usage line and
            # no provider latency; it is kept apart as what the cache saved (ingest/writing.py, docs/litellm.md).
            yield UsageRow(
                period_start=hour,
                period_end=hour + HOUR,
                model_raw=model,
                input_tokens=group.input,
                cached_input_tokens=group.cached,
                cache_write_tokens=group.cache_write,
                output_tokens=group.output,
                requests=group.requests,
                cost=None,
                provider_slug=provider,
                api_key_ref=api_key,
                user_ref=user,
                tags=dict(tags),
                source_ref=group.first_where,
                latency=None if cache_hit else group.performance,
                charge_category=GATEWAY_CACHE_HIT if cache_hit else "usage",
            )


def _ms(delta: dt.timedelta) -> int:
    return round(delta / dt.timedelta(milliseconds=1))
