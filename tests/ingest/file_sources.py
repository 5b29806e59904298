"""Reading a file with a source kind (ingest/connectors), for the tests of each kind: its rows, or the error
that refuses it — permanent and for bad input, since a bad file is never retried."""

import io

import pytest

from ingest.connectors.base import ProviderError


def rows_of(source, data: bytes, name: str) -> list:
    return list(source().parse(io.BytesIO(data), file_name=name))


def refusal(source, data: bytes, name: str) -> str:
    """The message of the ProviderError that refuses the file."""
    with pytest.raises(ProviderError) as excinfo:
        rows_of(source, data, name)
    assert excinfo.value.permanent is True
    assert excinfo.value.reason == "bad_input"
    return str(excinfo.value)
