"""Reading a gateway log file as records, one at a time, whatever its format (gateway/log.py names them): a CSV
export of LiteLLM_SpendLogs, a JSON array or `{"data": [...]}` envelope read incrementally, or JSONL.

Each record comes with where it was read (`file line N`), so an error names the line. Nothing here knows what a
record means; gateway/log.py turns records into requests and hourly rows.
"""

import csv
import io
import itertools
import json
from decimal import Decimal

from ingest.connectors.base import ProviderError, csv_lines
from ingest.connectors.text_input import MAX_LINE_CHARS, bounded_lines

SNIFF_CHARS = 1 << 16
READ_CHARS = 1 << 18
# The columns of a LiteLLM_SpendLogs CSV export as LiteLLM writes them, in its order (those this reader reads; a
# newer LiteLLM adds more, e.g. cache_hit). The demo's and the bench's generated exports write these.
SPEND_LOG_COLUMNS = (
    "request_id",
    "startTime",
    "endTime",
    "completionStartTime",
    "model",
    "custom_llm_provider",
    "prompt_tokens",
    "completion_tokens",
    "spend",
    "api_key",
    "team_id",
    "user",
    "metadata",
    "request_tags",
    "status",
)
CSV_REQUIRED = ("startTime", "model", "prompt_tokens", "completion_tokens")
CSV_MARKERS = {
    "request_id",
    "startTime",
    "endTime",
    "prompt_tokens",
    "completion_tokens",
    "spend",
    "custom_llm_provider",
}
FORMATS = "LiteLLM /spend/logs JSON, a LiteLLM_SpendLogs CSV export, or OpenAI-compatible JSONL"


# --- telling the format and reading records ---


def records(text, file_name: str):
    """(where, record) for every record of the file, whatever its format."""
    head = text.read(SNIFF_CHARS)
    stripped = head.lstrip()
    if not stripped:
        raise ProviderError(f"{file_name}: the file is empty")
    if stripped[0] in "[{":
        yield from _JsonRecords(head, text, file_name)
    else:
        yield from _csv_records(head, text, file_name)


def _csv_records(head: str, text, file_name: str):
    # Complete the last line of the sniffed chunk so the CSV reader sees whole lines.
    prefix = head + text.readline(MAX_LINE_CHARS + 1)
    lines = bounded_lines(io.StringIO(prefix, newline=""), file_name)
    rest = bounded_lines(text, file_name, first_line=prefix.count("\n") + 1)
    reader = csv.DictReader(itertools.chain(lines, rest))
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise ProviderError(f"{file_name} line 1: {exc}") from None
    if not CSV_MARKERS & set(header):
        raise ProviderError(f"{file_name}: unknown format; expected {FORMATS}")
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise ProviderError(
            f"{file_name}: not a LiteLLM_SpendLogs CSV, missing column(s) {', '.join(missing)} "
            "(expected request_id, startTime, endTime, completionStartTime, model, custom_llm_provider, "
            "prompt_tokens, completion_tokens, spend, api_key, team_id, user, metadata, request_tags)"
        )
    reader.fieldnames = header
    for where, row in csv_lines(reader, file_name):
        if None in row:
            raise ProviderError(f"{where}: more fields than the header has columns")
        if None in row.values():  # its last cells would read as absent: tokens as 0, a row of zeros
            present = sum(value is not None for value in row.values())
            raise ProviderError(
                f"{where}: {present} fields but the header has {len(header)} columns (a short row: fields left "
                "out, or a quote opened on this row and never closed)"
            )
        yield where, row


class _JsonRecords:
    """Top-level JSON read incrementally: an array of records, `{"data": [records], …}`, or one record per line."""

    def __init__(self, head: str, text, file_name: str):
        self.buffer, self.pos, self.line = head, 0, 1
        self.text, self.file_name, self.eof = text, file_name, False
        self.decoder = json.JSONDecoder(parse_float=Decimal)

    def __iter__(self):
        self._skip_ws()
        if self._peek() == "[":
            yield from self._array()
            self._expect_end()
            return
        first, line, records = self._object_or_envelope()
        if records is not None:
            yield from records
            return
        yield f"{self.file_name} line {line}", first  # JSONL (or concatenated JSON): one record per value
        while True:
            self._skip_ws()
            if self._peek() == "":
                return
            line = self.line
            value = self._value()
            if not isinstance(value, dict):
                raise ProviderError(
                    f"{self.file_name} line {line}: expected a JSON object per line, got {type(value).__name__}"
                )
            yield f"{self.file_name} line {line}", value

    # reading

    def _fill(self) -> bool:
        if self.eof:
            return False
        if len(self.buffer) - self.pos > MAX_LINE_CHARS:  # one record past the bound: refuse, do not hold it
            raise ProviderError(
                f"{self.file_name} line {self.line}: a record longer than {MAX_LINE_CHARS:,} characters; "
                "not a gateway log record (a request's record is a few kilobytes)"
            )
        chunk = self.text.read(READ_CHARS)
        if not chunk:
            self.eof = True
            return False
        # Keep only what is not consumed yet (line numbers were counted on the way): the buffer stays about
        # one chunk plus the record being read, however long the file.
        self.buffer, self.pos = self.buffer[self.pos :] + chunk, 0
        return True

    def _advance(self, to: int) -> None:
        self.line += self.buffer.count("\n", self.pos, to)
        self.pos = to

    def _peek(self) -> str:
        if self.pos >= len(self.buffer) and not self._fill():
            return ""
        return self.buffer[self.pos]

    def _skip_ws(self) -> None:
        while True:
            end = self.pos
            while end < len(self.buffer) and self.buffer[end] in " \t\r\n":
                end += 1
            self._advance(end)
            if end < len(self.buffer) or not self._fill():
                return

    def _expect(self, char: str) -> None:
        self._skip_ws()
        found = self._peek()
        if found != char:
            found = found or "end of file"
            where = f"{self.file_name} line {self.line}"
            raise ProviderError(f"{where}: not valid JSON (expected {char!r}, found {found!r})")
        self._advance(self.pos + 1)

    def _expect_end(self) -> None:
        self._skip_ws()
        if self._peek():
            raise ProviderError(f"{self.file_name} line {self.line}: unexpected data after the JSON document")

    def _value(self):
        self._skip_ws()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                if self._fill():
                    continue
                line = self.line + self.buffer.count("\n", self.pos, exc.pos)
                raise ProviderError(f"{self.file_name} line {line}: not valid JSON ({exc.msg})") from None
            if end == len(self.buffer) and self._fill():
                continue  # a number or literal may go on in the next chunk
            self._advance(end)
            return value

    # shapes

    def _array(self):
        self._expect("[")
        self._skip_ws()
        if self._peek() == "]":
            self._advance(self.pos + 1)
            return
        while True:
            self._skip_ws()
            line = self.line
            value = self._value()
            where = f"{self.file_name} line {line}"
            if not isinstance(value, dict):
                raise ProviderError(f"{where}: expected a JSON object per record, got {type(value).__name__}")
            yield where, value
            self._skip_ws()
            separator = self._peek()
            self._advance(self.pos + 1)
            if separator == "]":
                return
            if separator != ",":
                raise ProviderError(f"{self.file_name} line {self.line}: not valid JSON (expected ',' or ']')")

    def _object_or_envelope(self):
        """Read a top-level object key by key; a `data` array inside is streamed, not loaded."""
        line = self.line
        self._expect("{")
        fields = {}
        self._skip_ws()
        if self._peek() == "}":
            self._advance(self.pos + 1)
            return fields, line, None
        while True:
            self._skip_ws()
            key = self._value()
            if not isinstance(key, str):
                raise ProviderError(
                    f"{self.file_name} line {self.line}: not valid JSON (an object key must be a string)"
                )
            self._expect(":")
            self._skip_ws()
            # `{"data": [...]}` is the /spend/logs/v2 envelope; a response that has its own `data` (an embeddings
            # list) says what it is first ("object", "id", "model").
            if key == "data" and self._peek() == "[" and not fields.keys() & {"object", "id", "model", "usage"}:
                return None, line, self._envelope_rest()
            fields[key] = self._value()
            self._skip_ws()
            separator = self._peek()
            self._advance(self.pos + 1)
            if separator == "}":
                return fields, line, None
            if separator != ",":
                raise ProviderError(f"{self.file_name} line {self.line}: not valid JSON (expected ',' or '}}')")

    def _envelope_rest(self):
        yield from self._array()
        while True:  # the keys after "data" (total, page …) are read and ignored
            self._skip_ws()
            separator = self._peek()
            self._advance(self.pos + 1)
            if separator == "}":
                self._expect_end()
                return
            if separator != ",":
                raise ProviderError(f"{self.file_name} line {self.line}: not valid JSON (expected ',' or '}}')")
            self._value()
            self._expect(":")
            self._value()


# --- one request ---
