"""Tag sets and line signatures are stored once and shared by the lines that carry them (finops.spend.models.usage)."""

import io
import json

import pytest

from finops.models import Account, LineSignature, TagSet, UsageLine
from finops.spend.models.usage import tag_set_id, tags_text
from ingest.services import usage_file_import

FILE = (
    "day,model,input_tokens,output_tokens,cost,project,tags\n"
    "2026-10-01,gpt-5,100,10,0.5,alpha,env=prod;team=search\n"
    "2026-10-01,gpt-5-mini,200,20,0.25,alpha,env=prod;team=search\n"
    "2026-10-02,gpt-5,300,30,0.75,beta,env=staging\n"
)


def import_text(account: Account, text: str = FILE):
    return usage_file_import(account=account, stream=io.BytesIO(text.encode()), file_name="usage.csv")


def test_lines_with_the_same_tags_share_one_stored_set_and_a_second_import_adds_none(openai_account):
    first = import_text(openai_account)
    sets_after_first = TagSet.objects.count()
    second = import_text(openai_account)

    assert first.status == second.status == "succeeded"
    assert TagSet.objects.count() == sets_after_first
    lines = list(
        UsageLine.objects.filter(account=openai_account).select_related("tag_set").order_by("period_start", "model")
    )
    assert [line.tags for line in lines] == [{"env": "prod", "team": "search"}] * 2 + [{"env": "staging"}]
    assert lines[0].tag_set_id == lines[1].tag_set_id == tag_set_id(tags_text({"env": "prod", "team": "search"}))


def test_another_set_stored_under_the_same_id_fails_the_import_and_writes_nothing(openai_account):
    taken = tag_set_id(tags_text({"env": "staging"}))
    TagSet.objects.create(id=taken, tags={"env": "something else"})  # what a digest collision would look like

    run = import_text(openai_account)

    assert run.status == "failed"
    assert "shares its digest" in run.error and "staging" in run.error
    assert not UsageLine.objects.filter(account=openai_account).exists()


def test_lines_attributed_alike_share_one_signature_and_another_signature_under_its_id_fails_the_import(openai_account):
    text = FILE + "2026-10-03,gpt-5,400,40,1.0,beta,env=staging\n"  # the day before's line again, a day later
    assert import_text(openai_account, text).status == "succeeded"
    lines = list(UsageLine.objects.filter(account=openai_account).order_by("period_start", "model"))
    assert lines[2].signature_id == lines[3].signature_id  # equal on every column rules read
    assert (
        len({line.signature_id for line in lines}) == 3 == LineSignature.objects.filter(account=openai_account).count()
    )

    # What a digest collision would look like: the row stored under that id reads another key.
    LineSignature.objects.filter(id=lines[2].signature_id).update(user_ref="someone-else")
    run = import_text(openai_account, text)
    assert run.status == "failed" and "line signature" in run.error and "shares its digest" in run.error
    assert sorted(UsageLine.objects.filter(account=openai_account).values_list("id", flat=True)) == sorted(
        x.id for x in lines
    )


@pytest.mark.parametrize(
    "tags",
    [
        {},
        {"team": "search", "env": "prod", "Env": "x", "": ""},
        {'quote"back\\slash': "tab\tnewline\ncontrol\x01", "ünïcode": "日本語 😀", "z": "\u2028"},
        {"user:cost-center": "CC-401", "meter": "USE1-Claude3Haiku-input-tokens", "resource": "arn:aws:bedrock:x"},
        {"n": 1, "s": "x"},  # not all text: the encoder's own text
        {"b": True, "none": None, "list": ["a"]},
    ],
)
def test_a_tag_sets_text_is_the_canonical_json_encoders(tags):
    """tags_text builds the text of an all-text set itself (for speed): it must be the encoder's, byte for byte,
    since a set's id is its digest."""
    assert tags_text(tags) == json.dumps(tags, sort_keys=True, separators=(",", ":"))
