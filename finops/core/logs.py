"""Structured logs: what a log line is about (an ingest run, its account and window) travels with it.

`log_context(run_id=…, account=…, window=…)` sets fields in a context variable for the duration of a block;
every record created inside it — by any logger, ours, Celery's, psycopg's, the HTTP client's — carries them as
attributes, because they are added by the log record factory (installed once, at start-up, by
`install_record_factory`), not by a handler's filter: a handler added later (a test's caplog, Celery's) sees them too.
A context variable rather than a LoggerAdapter because the lines that matter are written deep inside code that
knows nothing of the run (the HTTP client's retries, the writer, the providers).

Two formatters, chosen by the LOG_FORMAT setting (docs/operations.md, "Logging"):
- `plain` (the default): `time level logger [run=… account=… window=…] message`, the bracket only inside a context;
- `json`: one JSON object per line, for a log collector: time, level, logger, message, the context fields as
  keys of their own, and the exception text when there is one.
"""

import contextlib
import contextvars
import datetime as dt
import json
import logging
import types

CONTEXT_FIELDS = ("run_id", "account_id", "account", "window_start", "window_end", "file")

_context: contextvars.ContextVar[dict] = contextvars.ContextVar(
    "finops_log_context", default=types.MappingProxyType({})
)


@contextlib.contextmanager
def log_context(**fields):
    """Add fields to every log record created inside the block (nested blocks add to the outer one's)."""
    token = _context.set({**_context.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


def current_context() -> dict:
    return dict(_context.get())


def _iso(value) -> str:
    return value.isoformat() if isinstance(value, (dt.datetime, dt.date)) else str(value)


def install_record_factory() -> None:
    """Wrap the record factory once: each record gets every context field (None outside a context) and
    `context`, the fields as `key=value` text in brackets for the plain format (empty outside a context)."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "finops_context", False):
        return

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        fields = _context.get()
        for name in CONTEXT_FIELDS:
            setattr(record, name, fields.get(name))
        record.context = (
            "[" + " ".join(f"{name}={_iso(fields[name])}" for name in CONTEXT_FIELDS if name in fields) + "] "
            if fields
            else ""
        )
        return record

    factory.finops_context = True
    logging.setLogRecordFactory(factory)


class PlainFormatter(logging.Formatter):
    """`time level logger [context] message`; a record made before the factory was installed has no context."""

    def __init__(self, fmt=None, datefmt=None, style="%", validate=True, **kwargs):
        super().__init__(fmt, datefmt, style, validate, defaults={"context": ""}, **kwargs)


class JsonFormatter(logging.Formatter):
    """One JSON object per line (LOG_FORMAT=json)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = _iso(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
