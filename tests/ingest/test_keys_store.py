"""Storing tag sets and line signatures set-based (ingest/keys.py, issue 23): the same rows as the ORM path stored,
digest collisions caught, and two imports storing overlapping new keys at once, on Postgres and the demo's SQLite."""

import json
import subprocess
import sys
import threading

import numpy as np
import pytest
from django.db import connection, transaction

from finops.models import Account, LineSignature, Provider, TagSet
from finops.spend.models.usage import signature_id, signature_ids, tag_set_id, tags_text
from ingest import keys
from ingest.lines import IngestError
from tests.sqlite_databases import PROJECT_ROOT, migrated_sqlite, sqlite_env
from tests.test_attribution_concurrency import _in_thread

# Values COPY's text format must escape, JSON must escape, or that a careless comparison would merge.
AWKWARD_TAGS = (
    {"user:team": "search", "resource": "arn:aws:bedrock:us-east-1:210000000000:application-inference-profile/a1b2c3"},
    {"path": "C:\\logs\\new", "note": 'tab\there, line\nbreak, \\N, "quoted"'},
    {"owner": "Zoë", "emoji": "🚀", "empty": ""},
    {"n": "1"},
    {},
)


def _tag_sets() -> dict[int, dict]:
    return {tag_set_id(tags_text(tags)): tags for tags in AWKWARD_TAGS}


def _signatures(
    account_id: int, provider_id: int, tag_sets: dict[int, dict], workload_id=None
) -> dict[int, LineSignature]:
    signatures = {}
    for n, tags_id in enumerate(sorted(tag_sets)):
        key = (
            account_id,
            provider_id,
            f"proj-{n}",
            "key\\with\tescapes" if n == 1 else "",
            "Zoë" if n == 2 else "",
            "claude-sonnet-4-5",
            "USE1-Claude4.5Sonnet-input-tokens",
            tags_id,
        )
        identity = signature_id(*key)
        signatures[identity] = LineSignature(id=identity, **dict(zip(LineSignature.KEY, key)), workload_id=workload_id)
    return signatures


def _stored(tag_sets: dict, signatures: dict) -> dict:
    """What the database holds for these keys, JSON-comparable across databases."""
    return {
        "tag_sets": {
            str(i): tags for i, tags in TagSet.objects.filter(id__in=list(tag_sets)).values_list("id", "tags")
        },
        "signatures": {
            str(s.id): [*s.key()[2:], str(s.workload_id)]  # account and provider ids differ between databases
            for s in LineSignature.objects.filter(id__in=list(signatures))
        },
    }


@pytest.fixture
def account(db):
    return Account.objects.create(
        name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file"
    )


@pytest.fixture(params=["as arrays", "staged", "copied first", "encoded ahead"])
def key_path(request, monkeypatch):
    """The ways a store goes on Postgres: a few keys (keys.SMALL_AT) as arrays in the `INSERT … ON
    CONFLICT`; more, staged in a temp table first; many (keys.FAST_AT), COPYed straight into the table first,
    falling back to the staged path when an id is already stored; and that, with the signatures sorted and encoded
    ahead as a column writer's helper thread does (keys.new_keys_encode). The COPY paths count the stagings, so a
    test can tell the COPY was taken. The scenarios' few keys are made to take each path."""
    staged = []
    if request.param != "as arrays":
        monkeypatch.setattr(keys, "SMALL_AT", 0)
    if request.param == "encoded ahead":
        store = keys.signatures_store

        def encoded_first(signatures):
            _, encoded, _ = keys.new_keys_encode(({}, signatures, {}))
            assert isinstance(encoded, keys.EncodedSignatures)
            return store(encoded)

        monkeypatch.setattr(keys, "signatures_store", encoded_first)
    if request.param in ("copied first", "encoded ahead"):
        monkeypatch.setattr(keys, "FAST_AT", 1)
        stage = keys._stage
        monkeypatch.setattr(
            keys, "_stage", lambda cursor, table, *a, **k: (staged.append(table), stage(cursor, table, *a, **k))
        )
    return request.param, staged


def _store_twice_and_collide(account, workload) -> dict:
    """The scenario both databases run: a first store, a second one of the same keys (a signature re-attributed
    meanwhile keeps its workload), then a different set and a different signature under taken ids."""
    tag_sets = _tag_sets()
    signatures = _signatures(account.id, account.provider_id, tag_sets)
    keys.new_keys_store(tag_sets, signatures)
    first = next(iter(sorted(signatures)))
    LineSignature.objects.filter(id=first).update(workload=workload)  # a re-attribution between imports
    keys.new_keys_store(tag_sets, _signatures(account.id, account.provider_id, tag_sets))
    result = {"stored": _stored(tag_sets, signatures)}
    taken = sorted(tag_sets)[1]
    for name, attempt in (
        ("tag_set", lambda: keys.tag_sets_store({**tag_sets, taken: {"env": "another set"}})),
        (
            "signature",
            lambda: keys.signatures_store(
                {
                    first: LineSignature(
                        id=first,
                        **dict(
                            zip(
                                LineSignature.KEY,
                                (*signatures[first].key()[:4], "someone-else", *signatures[first].key()[5:]),
                            )
                        ),
                    )
                }
            ),
        ),
    ):
        try:
            with transaction.atomic():
                attempt()
            result[name] = "stored"
        except IngestError as error:
            result[name] = str(error)
    result["after"] = _stored(tag_sets, signatures)
    return result


def _check(result: dict, workload_id: int) -> None:
    stored = result["stored"]
    assert stored == result["after"]  # the refused stores changed nothing
    canonical = lambda tags: json.dumps(tags, sort_keys=True)  # noqa: E731
    assert sorted(stored["tag_sets"].values(), key=canonical) == sorted(AWKWARD_TAGS, key=canonical)
    assert len(stored["signatures"]) == len(AWKWARD_TAGS)
    workloads = sorted(row[-1] for row in stored["signatures"].values())
    assert workloads == sorted([str(workload_id)] + ["None"] * (len(AWKWARD_TAGS) - 1))
    assert "shares its digest" in result["tag_set"] and "another set" in result["tag_set"]
    assert "line signature" in result["signature"] and "shares its digest" in result["signature"]


def test_the_set_based_store_keeps_every_value_and_refuses_a_digest_collision_on_postgres(
    account, support_agent, key_path
):
    assert connection.vendor == "postgresql"
    result = _store_twice_and_collide(account, support_agent)
    if key_path[0] in ("copied first", "encoded ahead"):
        # The first store's new signatures went straight in; the second store's (all stored) and the clashing one
        # were refused by the COPY and staged. (The empty tag set is stored already: the first store stages sets.)
        assert key_path[1].count("ingest_new_signatures") == 2
    _check(result, support_agent.id)
    tag_sets = _tag_sets()
    assert {int(i): tags for i, tags in result["stored"]["tag_sets"].items()} == tag_sets
    expected = {
        str(i): [*s.key()[2:], "None"] for i, s in _signatures(account.id, account.provider_id, tag_sets).items()
    }
    expected[min(expected, key=int)][-1] = str(support_agent.id)  # the re-attributed one kept its workload
    assert result["stored"]["signatures"] == expected


SQLITE_SCRIPT = """
import json, django
django.setup()
from finops.models import Account, Provider, Team, Workload
from tests.ingest.test_keys_store import _store_twice_and_collide
account = Account.objects.create(name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"),
connector="focus_file")
team = Team.objects.create(name="Support", slug="support")
workload = Workload.objects.create(team=team, name="Support agent", slug="support-agent")
print("RESULT " + json.dumps({"workload": workload.id, **_store_twice_and_collide(account, workload)}))
"""


@pytest.mark.slow  # left out of make test-fast (tests/conftest.py says why)
def test_the_demo_s_sqlite_path_stores_the_same_rows_and_refuses_the_same_collisions(
    account, support_agent, tmp_path, tmp_path_factory
):
    database = migrated_sqlite(tmp_path_factory, tmp_path / "keys.sqlite3")
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_SCRIPT],
        cwd=PROJECT_ROOT,
        env=sqlite_env(database),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sqlite = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    _check(sqlite, sqlite["workload"])

    postgres = _store_twice_and_collide(account, support_agent)
    assert sqlite["stored"]["tag_sets"] == postgres["stored"]["tag_sets"]  # the same ids for the same sets
    # Signature ids hash the account and provider ids, which differ between the two databases: compare by key
    # (which one was re-attributed differs too; _check counted one kept workload on each).
    assert sorted(row[:-1] for row in sqlite["stored"]["signatures"].values()) == sorted(
        row[:-1] for row in postgres["stored"]["signatures"].values()
    )


def _wait_until_blocked(pid_holder: dict) -> None:
    """Until the other connection waits on a lock (the first import's uncommitted rows)."""
    import time

    for _ in range(200):
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid_holder["pid"]])
            row = cursor.fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.05)
    raise AssertionError("the second import never waited on the first")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("collide", [False, True], ids=["overlapping keys", "a collision across imports"])
def test_two_imports_storing_overlapping_new_keys_at_once(reseeded, collide, key_path):
    account = Account.objects.create(
        name="bedrock", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file"
    )
    tag_sets = _tag_sets()
    first_half = dict(list(tag_sets.items())[:3])
    second_half = dict(list(tag_sets.items())[1:])  # two sets in common
    if collide:
        shared = sorted(set(first_half) & set(second_half))[0]
        second_half[shared] = {"env": "the other import's set"}
    # A set another test's committed rows left in this database (the empty set is every import's) is no one's here.
    earlier = set(TagSet.objects.filter(id__in=list(tag_sets)).values_list("id", flat=True))
    signatures = _signatures(account.id, account.provider_id, tag_sets)
    first_signatures = {i: s for i, s in signatures.items() if s.tag_set_id in first_half}
    second_signatures = {i: s for i, s in signatures.items() if s.tag_set_id in second_half}
    stored_first, go_on, second_pid = threading.Event(), threading.Event(), {}

    def first():
        with transaction.atomic():
            keys.new_keys_store(first_half, first_signatures)
            stored_first.set()
            assert go_on.wait(20)
        return "committed"

    def second():
        assert stored_first.wait(20)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            second_pid["pid"] = cursor.fetchone()[0]
        with transaction.atomic():
            keys.new_keys_store(second_half, second_signatures)
        return "committed"

    one, one_outcome = _in_thread(first)
    two, two_outcome = _in_thread(second)
    assert stored_first.wait(20)
    while "pid" not in second_pid:
        two.join(0.05)
    _wait_until_blocked(second_pid)  # the second import waits on the first's rows, not failing, not duplicating
    go_on.set()
    one.join(30), two.join(30)
    assert one_outcome == {"value": "committed"}
    stored = dict(TagSet.objects.filter(id__in=list(set(tag_sets) - earlier)).values_list("id", "tags"))
    first_half, tag_sets = ({i: t for i, t in sets.items() if i not in earlier} for sets in (first_half, tag_sets))
    if collide:
        assert "shares its digest" in str(two_outcome["error"]) and "the other import's set" in str(
            two_outcome["error"]
        )
        assert stored == first_half  # the second import stored nothing: its transaction rolled back
        assert set(LineSignature.objects.filter(account=account).values_list("id", flat=True)) == set(first_signatures)
    else:
        assert two_outcome == {"value": "committed"}
        assert stored == tag_sets
        assert set(LineSignature.objects.filter(account=account).values_list("id", flat=True)) == set(signatures)


def test_signature_ids_in_bulk_are_signature_ids_one_by_one():
    """signature_ids (a gateway log's signatures, digested in bulk) gives signature_id's ids, the one definition:
    texts escaped as JSON writes them (quotes, backslashes, control characters, non-ASCII), ids of any sign,
    int64 arrays as ints; a column of another type is refused, as signature_id's canonical JSON would not write it."""
    texts = ["", "k", 'qu"ote', "back\\slash", "line\nbreak", "tab\t", "é", "日本", "\u2028", "emoji 🎉", " pad "]
    rows = [
        (provider, key, user, model, raw, tags)
        for provider, tags in ((1, 0), (7, -(2**63)), (2**40, 2**63 - 1), (3, -5))
        for key, user, model, raw in zip(texts, reversed(texts), texts[3:] + texts[:3], texts[5:] + texts[:5])
    ]
    providers, keys, users, models, raws, tag_sets = (list(column) for column in zip(*rows))
    expected = [signature_id(42, p, "", k, u, m, r, t) for p, k, u, m, r, t in rows]
    assert signature_ids(42, providers, "", keys, users, models, raws, tag_sets).tolist() == expected
    as_arrays = signature_ids(42, np.array(providers), "", keys, users, models, raws, np.array(tag_sets))
    assert as_arrays.dtype == np.int64 and as_arrays.tolist() == expected
    assert signature_ids(42, [1], "proj é", ["k"], ["u"], ["m"], ["r"], [9]).tolist() == [
        signature_id(42, 1, "proj é", "k", "u", "m", "r", 9)
    ]
    for bad in (
        dict(api_key_refs=[None] * len(rows)),
        dict(provider_ids=[str(p) for p in providers]),
        dict(tag_set_ids=np.array(tag_sets, dtype=np.float64)),
        dict(provider_ids=[True] * len(rows)),
    ):
        columns = dict(
            provider_ids=providers,
            api_key_refs=keys,
            user_refs=users,
            models=models,
            model_raws=raws,
            tag_set_ids=tag_sets,
        )
        with pytest.raises(TypeError):
            signature_ids(42, project_ref="", **{**columns, **bad})
    with pytest.raises(ValueError):
        signature_ids(42, providers[:-1], "", keys, users, models, raws, tag_sets)


def test_a_log_imported_again_stores_its_keys_once_and_the_same_lines(db, support_agent, tmp_path, monkeypatch):
    """A scattered log's ~2,000 new signatures are COPYed straight into the table (no staging); imported again,
    every one is stored already, so the COPY is refused and the staged `INSERT … ON CONFLICT` path stores nothing
    new: the same signatures (a re-attributed one keeps its workload) and the same lines."""
    from bench.gateway_export import write_spend_logs_csv
    from finops.models import IngestRun, UsageLine
    from ingest.services import usage_file_import

    path = tmp_path / "scattered.csv"
    write_spend_logs_csv(path, 2500, seed=5, shape="scattered")
    gateway = Account.objects.create(
        name="gateway", provider=Provider.objects.get(slug="groq"), connector="gateway_log"
    )
    staged = []
    stage = keys._stage
    monkeypatch.setattr(
        keys, "_stage", lambda cursor, table, *a, **k: (staged.append(table), stage(cursor, table, *a, **k))
    )

    def imported() -> tuple[list, dict]:
        with path.open("rb") as stream:
            run = usage_file_import(account=gateway, stream=stream, file_name=path.name)
        assert run.status == IngestRun.Status.SUCCEEDED, run.error
        lines = sorted(
            UsageLine.objects.filter(account=gateway).values_list("period_start", "signature_id", "requests", "cost")
        )
        signatures = {s.id: (*s.key(), s.workload_id) for s in LineSignature.objects.filter(account=gateway)}
        return lines, signatures

    lines, signatures = imported()
    assert len(signatures) >= keys.FAST_AT and "ingest_new_signatures" not in staged  # COPYed straight in
    assert {signature for _, signature, _, _ in lines} == set(signatures)
    first = min(signatures)
    LineSignature.objects.filter(id=first).update(workload=support_agent)  # a re-attribution between imports
    signatures[first] = (*signatures[first][:-1], support_agent.id)
    again_lines, again_signatures = imported()
    assert "ingest_new_signatures" in staged  # the COPY refused: every id was stored
    assert again_lines == lines and again_signatures == signatures
