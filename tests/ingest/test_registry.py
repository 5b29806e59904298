from finops.models import ConnectorKind
from finops.sources.models import API_CONNECTORS
from ingest.connectors.registry import API_SOURCES, FILE_SOURCES


def test_every_connector_kind_a_user_can_pick_has_exactly_one_reader():
    assert set(API_SOURCES) | set(FILE_SOURCES) == set(ConnectorKind.values)
    assert not set(API_SOURCES) & set(FILE_SOURCES)
    assert set(API_SOURCES) == {kind.value for kind in API_CONNECTORS}
