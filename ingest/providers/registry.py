"""Connector kind -> class. Issue 3 adds the API and FOCUS/gateway connectors here."""

from .usage_csv import UsageCsv

FILE_SOURCES = {source.kind: source for source in (UsageCsv(),)}


def file_source_for(kind: str):
    try:
        return FILE_SOURCES[kind]
    except KeyError:
        raise LookupError(f"connector {kind!r} does not read files (file connectors: {', '.join(FILE_SOURCES)})") from None
