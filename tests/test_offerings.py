"""Offerings, model families and routing policies: the config sections, the one service behind them, and the
family every usage line's model maps to."""

from decimal import Decimal

import pytest
import yaml

from finops.models import ModelFamily, Offering, Provider, RoutingPolicy
from finops.whatif.families import canonical_family
from finops.whatif.selectors.offerings import family_map
from finops.whatif.services import OfferingInvalid, offering_upsert, offerings_seed, routing_policy_set

from .config_helpers import apply, apply_failing, export

CONFIG = """
teams:
  - {name: Support Platform, slug: support}
workloads:
  - {name: Support agent, slug: support-agent, team: support, latency_profile: interactive, sla_seconds: "4"}
families:
  - {slug: llama-3.3-70b, name: Llama 3.3 70B, aliases: [meta.llama3-3-70b-instruct-v1:0]}
offerings:
  - {provider: groq, model: llama-3.3-70b, family: llama-3.3-70b, input_per_mtok: "0.59", output_per_mtok: "0.79",
     output_tokens_per_s: "275", ttft_seconds: "0.2", context_window: 131072}
  - {provider: together, model: Llama-3.3-70B-Instruct-Turbo, family: llama-3.3-70b, blended_per_mtok: "0.88",
     output_tokens_per_s: "90"}
  - {provider: cerebras, model: llama3.3-70b, input_per_mtok: "0.85", output_per_mtok: "1.20"}
routing:
  - workload: support-agent
    primary: {provider: groq, model: llama-3.3-70b}
    fallback: {provider: cerebras, model: llama3.3-70b}
    constraint: latency
    allowed: [{provider: groq, model: llama-3.3-70b}, {provider: cerebras, model: llama3.3-70b}]
"""


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "finops.yaml"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize(
    "model",
    [
        "meta.llama3-3-70b-instruct-v1:0",
        "llama-3.3-70b",
        "llama3.3-70b",
        "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "llama-3.3-70b-versatile",
    ],
)
def test_bedrock_groq_cerebras_and_together_names_of_llama_3_3_70b_are_one_family(model):
    assert canonical_family(model) == "llama-3.3-70b"


def test_a_different_size_or_version_is_another_family():
    assert canonical_family("llama3.1-8b") == "llama-3.1-8b"
    assert canonical_family("us.meta.llama3-1-70b-instruct-v1:0") == "llama-3.1-70b"
    assert canonical_family("groq/openai/gpt-oss-120b") == "gpt-oss-120b"


def test_config_creates_offerings_families_and_the_routing_policy(db, config_file):
    assert "offerings: 3 created" in apply(config_file)
    groq = Offering.objects.get(provider__slug="groq")
    assert (groq.input_per_mtok, groq.output_per_mtok, groq.output_tokens_per_s) == (
        Decimal("0.59"),
        Decimal("0.79"),
        Decimal("275"),
    )
    # The model is stored normalised; a family left out is the model's own.
    assert Offering.objects.get(provider__slug="together").model == "llama-3.3-70b-instruct-turbo"
    assert Offering.objects.get(provider__slug="cerebras").family == "llama-3.3-70b"
    policy = RoutingPolicy.objects.get(workload__slug="support-agent")
    assert (policy.primary, policy.fallback.provider.slug, policy.constraint) == (groq, "cerebras", "latency")
    assert policy.allowed.count() == 2


def test_an_alias_from_config_maps_a_line_model_to_its_family(db, config_file):
    apply(config_file)
    ModelFamily.objects.create(slug="house-llama", aliases=["acme-llama-ft"])
    families = family_map()
    assert families.family_of("meta.llama3-3-70b-instruct-v1:0") == "llama-3.3-70b"
    assert families.family_of("acme-llama-ft") == "house-llama"


def test_export_prints_the_sections_back_and_a_round_trip_changes_nothing(db, config_file, tmp_path):
    apply(config_file)
    exported = export()
    document = yaml.safe_load(exported)
    groq = next(o for o in document["offerings"] if o["provider"] == "groq")
    assert groq == {
        "provider": "groq",
        "model": "llama-3.3-70b",
        "family": "llama-3.3-70b",
        "input_per_mtok": "0.59",
        "output_per_mtok": "0.79",
        "output_tokens_per_s": "275",
        "ttft_seconds": "0.2",
        "context_window": 131072,
    }
    assert document["routing"][0]["primary"] == {"provider": "groq", "model": "llama-3.3-70b"}
    assert document["families"][0]["aliases"] == ["llama3-3-70b-instruct"]
    again = tmp_path / "again.yaml"
    again.write_text(exported)
    summary = apply(again)
    assert "offerings: 0 created, 0 updated, 3 unchanged" in summary
    assert "routing: 0 created, 0 updated, 1 unchanged" in summary


def test_a_routing_entry_naming_an_unknown_offering_is_refused_and_nothing_is_applied(db, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        CONFIG.replace(
            "fallback: {provider: cerebras, model: llama3.3-70b}", "fallback: {provider: cerebras, model: llama-9-70b}"
        )
        + "  - {workload: nobody, primary: {provider: groq, model: llama-3.3-70b}}\n"
    )
    error = apply_failing(path)
    assert "routing[0] (workload=support-agent): fallback: no offering cerebras/llama-9-70b" in error
    assert "routing[1] (workload=nobody): workload: unknown workload 'nobody'" in error
    assert not Offering.objects.exists()


def test_an_offering_with_an_input_price_and_no_output_price_is_refused_naming_the_field(db, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "offerings:\n  - {provider: groq, model: llama-3.3-70b, output_tokens_per_s: '-3'}\n"
        "  - {provider: cerebras, model: llama3.3-70b, input_per_mtok: '0.85'}\n"
    )
    error = apply_failing(path)
    assert (
        "offerings[0] (model=llama-3.3-70b): output_tokens_per_s: Ensure this value is greater than or equal to 0."
        in error
    )
    assert "offerings[1] (model=llama3.3-70b): output_per_mtok: give input and output prices together" in error
    assert not Offering.objects.exists()


def test_the_service_refuses_a_fallback_equal_to_the_primary(db, support_agent):
    groq = Provider.objects.get(slug="groq")
    offering, outcome = offering_upsert(provider=groq, model="llama-3.3-70b", blended_per_mtok=Decimal("0.7"))
    assert outcome == "created" and offering.family == "llama-3.3-70b"
    with pytest.raises(OfferingInvalid) as caught:
        routing_policy_set(workload=support_agent, primary=offering, fallback=offering)
    assert caught.value.errors == {"fallback": "must differ from the primary"}


def test_a_member_cannot_write_an_offering(db, sam):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        offering_upsert(by=sam, provider=Provider.objects.get(slug="groq"), model="x", blended_per_mtok=Decimal(1))


def test_an_admin_adds_an_offering_through_the_form_and_everyone_reads_the_list(db, client_as, ada, sam):
    groq = Provider.objects.get(slug="groq")
    response = client_as(ada).post(
        "/offerings/new/",
        {
            "provider": groq.id,
            "model": "Llama-3.3-70B-Versatile",
            "family": "",
            "input_per_mtok": "0.59",
            "output_per_mtok": "0.79",
            "output_tokens_per_s": "275",
            "ttft_seconds": "0.2",
            "context_window": "131072",
        },
    )
    assert response.status_code == 302
    offering = Offering.objects.get(provider=groq)
    assert (offering.model, offering.family) == ("llama-3.3-70b-versatile", "llama-3.3-70b")
    page = client_as(sam).get("/offerings/").content.decode()
    assert "llama-3.3-70b-versatile" in page and "entered" in page
    assert "/offerings/new/" not in page


def test_the_form_shows_the_services_error_on_the_field(db, client_as, ada):
    response = client_as(ada).post(
        "/offerings/new/", {"provider": Provider.objects.get(slug="groq").id, "model": "x", "input_per_mtok": "0.59"}
    )
    assert response.status_code == 200
    assert "give input and output prices together" in response.content.decode()
    assert not Offering.objects.exists()


def test_members_and_finance_cannot_reach_the_form(db, client_as, sam, fiona):
    # Offerings are the organisation's and everyone reads them: the form is refused (403), not hidden.
    assert client_as(sam).get("/offerings/new/").status_code == 403
    assert client_as(fiona).get("/offerings/new/").status_code == 403


# --- the seed (issue 28; moved here from tests/test_whatif_same_model.py, whose data includes it) ---


def test_the_seed_offers_the_same_model_on_every_cloud_that_sells_it_with_its_tiers(db):
    created = offerings_seed()
    assert created > 60
    sonnet = set(Offering.objects.filter(family="claude-sonnet-4-5").values_list("provider__slug", "tier"))
    assert sonnet >= {(p, t) for p in ("anthropic", "aws-bedrock", "gcp-vertex") for t in ("standard", "batch")}
    gpt5 = set(Offering.objects.filter(family="gpt-5").values_list("provider__slug", "tier"))
    assert gpt5 >= {("openai", t) for t in ("standard", "batch", "flex", "priority")} | {("azure-openai", "standard")}
    llama = set(Offering.objects.filter(family="llama-3.3-70b").values_list("provider__slug", flat=True))
    assert llama >= {"groq", "cerebras", "aws-bedrock", "together", "fireworks", "deepinfra"}
    assert offerings_seed() == 0  # idempotent


def test_the_seed_never_overwrites_an_offering_set_by_config_or_by_hand(db):
    mine, _ = offering_upsert(
        provider=Provider.objects.get(slug="groq"), model="gpt-oss-120b", output_tokens_per_s=Decimal(123)
    )
    offerings_seed()
    mine.refresh_from_db()
    assert mine.output_tokens_per_s == Decimal(123)
