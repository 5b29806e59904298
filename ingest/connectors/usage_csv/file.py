"""The product's own usage CSV (docs/usage-csv.md): one row per day, provider and model.

    day,provider,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,requests,cost,currency,project,api_key,tags

`input_tokens` is all input (uncached + cached + cache write), as `spend` prints it; `cost` is optional
(empty: priced from the catalog); `tags` is a JSON object or `k=v;k=v`. Unknown extra columns are ignored.
"""

import csv
import datetime as dt

from ingest.connectors.base import ProviderError, UsageRow, csv_lines
from ingest.connectors.parsing import day_start, parse_count, parse_day, parse_decimal, parse_tags
from ingest.connectors.text_input import bounded_lines, utf8_text

REQUIRED = ("day", "model", "input_tokens", "output_tokens")
KNOWN = REQUIRED + (
    "provider",
    "cached_input_tokens",
    "cache_write_tokens",
    "requests",
    "cost",
    "currency",
    "project",
    "api_key",
    "tags",
    "user",
)


class UsageCsv:
    kind = "usage_csv"

    def parse(self, stream, *, file_name: str):
        try:
            yield from self._parse(stream, file_name)
        except UnicodeDecodeError:
            raise ProviderError(f"{file_name}: not UTF-8 text (save or export the CSV as UTF-8)") from None

    def _parse(self, stream, file_name: str):
        reader = csv.DictReader(bounded_lines(utf8_text(stream), file_name))
        try:
            header = [h.strip() for h in (reader.fieldnames or [])]
        except csv.Error as exc:
            raise ProviderError(f"{file_name} line 1: {exc}") from None
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise ProviderError(
                f"{file_name}: not a usage CSV, missing column(s) {', '.join(missing)} "
                f"(expected {', '.join(KNOWN[:13])})"
            )
        reader.fieldnames = header
        for where, row in csv_lines(reader, file_name):
            try:
                yield self._row(_whole_row(row, file_name, reader.line_num, len(header)), where)
            except (ValueError, TypeError, OverflowError) as exc:  # OverflowError: the day after 9999-12-31
                raise ProviderError(f"{where}: {exc}") from None

    @staticmethod
    def _row(row: dict, where: str) -> UsageRow:
        get = lambda name: (row.get(name) or "").strip()  # noqa: E731
        if not get("model"):
            raise ValueError("model is empty")
        for name in ("input_tokens", "output_tokens"):  # a required count left empty is a row not read, not a zero
            if not get(name):
                raise ValueError(f"{name} is empty (write 0 when there were none)")
        day = parse_day(get("day"))
        all_input = parse_count(get("input_tokens"), "input_tokens")
        cached = parse_count(get("cached_input_tokens"), "cached_input_tokens")
        cache_write = parse_count(get("cache_write_tokens"), "cache_write_tokens")
        if cached + cache_write > all_input:
            raise ValueError(
                f"cached_input_tokens + cache_write_tokens ({cached + cache_write}) exceed input_tokens ({all_input}); "
                "input_tokens counts all input"
            )
        cost = parse_decimal(get("cost")) if get("cost") else None
        return UsageRow(
            period_start=day_start(day),
            period_end=day_start(day + dt.timedelta(days=1)),
            provider_slug=get("provider").lower(),
            model_raw=get("model"),
            input_tokens=all_input - cached - cache_write,
            cached_input_tokens=cached,
            cache_write_tokens=cache_write,
            output_tokens=parse_count(get("output_tokens"), "output_tokens"),
            requests=parse_count(get("requests"), "requests"),
            cost=cost,
            currency=(get("currency") or "USD").upper(),
            project_ref=get("project"),
            api_key_ref=get("api_key"),
            user_ref=get("user"),
            tags=parse_tags(get("tags")),
            source_ref=where,
        )


def _whole_row(row: dict, file_name: str, last_line: int, columns: int) -> dict:
    """The row, when it holds that holds exactly one field per column on one line; else ValueError naming the line.

    A usage CSV field never holds a line break, so a row that does is a quote left open: the csv module reads on
    to the next quote (or the end of the file), swallowing the rows between into one field. A row with fewer
    fields than the header (a missing field or delimiter) would otherwise read its missing cells as empty and
    import as zeros. Both fail the file at the line where the row starts."""
    texts = [value for value in row.values() if isinstance(value, str)]
    breaks = sum(value.count("\n") + value.count("\r") - value.count("\r\n") for value in texts)
    if breaks:
        # line_num counts the lines read; a quote open at the end of the file holds the last line's break too.
        first_line = last_line - breaks + (1 if texts[-1].endswith(("\n", "\r")) else 0)
        raise ProviderError(
            f"{file_name} line {first_line}: a quoted field opened on this line is not closed before the line ends "
            f"(the row runs on to line {last_line}): close the quote; a usage CSV field never holds a line break"
        )
    if None in row:
        raise ValueError(f"more fields than the header has columns ({columns})")
    present = sum(1 for value in row.values() if value is not None)
    if present < columns:
        missing = [name for name, value in row.items() if value is None]
        raise ValueError(
            f"{present} fields where the header has {columns} columns: {', '.join(missing)} missing "
            + (
                "(a quote opened on this line is never closed)"
                if any("," in value for value in row.values() if value)
                else "(a short row: a field or a comma left out)"
            )
        )
    return row
