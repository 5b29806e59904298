"""One organisation with something of every kind for team A (Support) and team B (Search), built once per module
for the access matrix (tests/test_access_matrix.py) and the API fuzzing (tests/test_api_fuzz.py).

Roles, as docs/access.md names them: an admin, a finance partner, the lead of team A, a plain member of team B,
and an anonymous caller. Every object a URL can name exists for both teams where it belongs to a team, so a
URL's kwargs can name "ours" or "theirs"; objects that span teams (accounts, runs, rules, contracts, offerings,
organisation caps, re-attribution jobs) exist once.
"""

import datetime as dt
import io
from dataclasses import dataclass

from finops.models import (
    Account,
    AlertEvent,
    AlertKind,
    AttributionRule,
    Cap,
    CapScope,
    Contract,
    IngestRun,
    Membership,
    Offering,
    Provider,
    ReattributionJob,
    ReportSubscription,
    Team,
    User,
    Workload,
)
from finops.org.services.users import user_set_role
from ingest.services import usage_file_import
from tests.conftest import PASSWORD, stored_cap
from tests.data_once import built_once

ROLES = ("admin", "finance", "lead_a", "member_b", "anonymous")


@dataclass
class TeamObjects:
    team: Team
    workload: Workload
    rule: AttributionRule
    team_cap: Cap
    workload_cap: Cap
    alert: AlertEvent


@dataclass
class World:
    users: dict[str, User]
    a: TeamObjects
    b: TeamObjects
    file_account: Account
    api_account: Account
    run: IngestRun
    org_cap: Cap
    contract: Contract
    offering: Offering
    job: ReattributionJob
    focus_account: Account  # a FOCUS file account (its services page, its PATCH in the API)
    report_subscription: ReportSubscription  # finance's subscription to the monthly report (its email preview)

    def of(self, side: str) -> TeamObjects:
        return self.a if side == "a" else self.b


def _user(username: str, role: str, team: Team | None = None, team_role: str = Membership.Role.LEAD) -> User:
    user = User.objects.create_user(username=username, email=f"{username}@example.com", password=PASSWORD)
    user_set_role(user=user, role=role)
    if team is not None:
        Membership.objects.create(user=user, team=team, role=team_role)
    return user


def _team_objects(slug: str, name: str, project: str, priority: int, period_start: dt.date) -> TeamObjects:
    team = Team.objects.create(name=name, slug=slug, cost_center=f"CC-{priority}")
    workload = Workload.objects.create(
        team=team,
        name=f"{name} agent",
        slug=f"{slug}-agent",
        latency_profile="realtime",
        outcome_unit="ticket resolved",
    )
    rule = AttributionRule.objects.create(workload=workload, priority=priority, project=project)
    team_cap = stored_cap(name=f"{name} monthly", scope=CapScope.TEAM, team=team, amount=100)
    workload_cap = stored_cap(name=f"{name} agent monthly", scope=CapScope.WORKLOAD, workload=workload, amount=50)
    alert = AlertEvent.objects.create(
        kind=AlertKind.CAP_THRESHOLD,
        subject=f"cap:{team_cap.id}",
        period_start=period_start,
        threshold=80,
        cap=team_cap,
        team=team,
        title=f"{name} crossed 80 %",
    )
    return TeamObjects(team, workload, rule, team_cap, workload_cap, alert)


def build_world() -> World:
    today = dt.datetime.now(dt.UTC).date()
    month = today.replace(day=1)
    a = _team_objects("support", "Support Platform", "proj_support", 1, month)
    b = _team_objects("search", "Search Ranking", "proj_search", 2, month)
    users = {
        "admin": _user("ada", User.Role.ADMIN),
        "finance": _user("fiona", User.Role.FINANCE),
        "lead_a": _user("sam", User.Role.MEMBER, a.team, Membership.Role.LEAD),
        "member_b": _user("milo", User.Role.MEMBER, b.team, Membership.Role.MEMBER),
    }
    openai = Provider.objects.get(slug="openai")
    file_account = Account.objects.create(name="openai-files", provider=openai, connector="usage_csv")
    api_account = Account.objects.create(
        name="openai-api", provider=openai, connector="openai_api", base_url="http://127.0.0.1:9/v1"
    )  # nothing listens there: a sync fails fast
    yesterday = (today - dt.timedelta(days=1)).isoformat()
    text = (
        "day,model,input_tokens,output_tokens,requests,cost,project\n"
        f"{yesterday},gpt-5-mini,1000,100,10,3.12,proj_support\n"
        f"{yesterday},gpt-5,2000,200,20,,proj_search\n"
        f"{yesterday},gpt-5,3000,300,30,1.50,proj_nobody\n"
    )
    run = usage_file_import(account=file_account, stream=io.BytesIO(text.encode()), file_name="usage.csv")
    assert run.status == "succeeded", run.error
    org_cap = stored_cap(name="Organisation monthly", scope=CapScope.ORG, amount=1000)
    contract = Contract.objects.create(
        name="OpenAI enterprise", provider=openai, start=month, end=month.replace(year=month.year + 1), commitment=12000
    )
    offering = Offering.objects.filter(provider=openai).first() or Offering.objects.create(
        provider=openai, model="gpt-5-mini", family="gpt-5-mini", input_per_mtok="0.25", output_per_mtok="2"
    )
    job = ReattributionJob.objects.create(requested_by=users["admin"], reason="rule changed")
    focus_account = Account.objects.create(
        name="bedrock-files", provider=Provider.objects.get(slug="aws-bedrock"), connector="focus_file"
    )
    report_subscription = ReportSubscription.objects.create(email="finance@example.com", user=users["finance"])
    return World(
        users,
        a,
        b,
        file_account,
        api_account,
        run,
        org_cap,
        contract,
        offering,
        job,
        focus_account,
        report_subscription,
    )


class WorldOnce:
    """Builds the world once per module (tests/data_once.py): each test's own transaction is a savepoint inside the
    module's, rolled back when the module is done."""

    def __init__(self, blocker):
        self.once = built_once(blocker)

    def __enter__(self) -> World:
        self.once.__enter__()
        return build_world()

    def __exit__(self, *exc):
        return self.once.__exit__(*exc)
