"""The demo's contracts (docs/demo.md, "Contracts"): three commitments, each with its story, made through the contract
service once the demo's usage is in."""

import datetime as dt
from decimal import ROUND_CEILING, Decimal

from django.conf import settings

from finops.models import Account

# Made here rather than in config.yaml (whose `contracts:` section is not there yet): their amounts come from the
# generated usage and the day the demo is loaded, so each keeps its story whichever day that is. All in the
# reporting currency (USD), which every covered account's rows are converted to.
SHORTFALL_CONTRACT = "Anthropic enterprise"
ON_TRACK_CONTRACT = "OpenAI scale tier"
MONTHLY_CONTRACT = "Bedrock monthly commit"


def contracts_load(*, today: dt.date) -> list[dict]:
    """Three contracts with three stories:

    - Anthropic enterprise: a year from 110 days ago, auto-renewing with 90 days' notice, so its notice deadline
      is 165 days away (inside the six months the contracts page looks ahead); committed at 1.6 × what the
      account is projected to use, rounded up to $10,000: a shortfall, and the advice to renew at or below the
      last three months' spend × 12.
    - OpenAI scale tier: a year from 90 days ago, not renewing, committed at its projection rounded up to
      $1,000: on track.
    - Bedrock monthly commit: per calendar month from the first of the month three months back, for a year,
      committed at 80 % of the last 30 days' spend per month (rounded to $100): each month goes over (overage).
    """
    from finops.contracts.selectors import add_months, contract_status
    from finops.core.months import month_of
    from finops.models import CommitmentBasis

    anthropic_start = today - dt.timedelta(days=110)
    anthropic = _contract(
        SHORTFALL_CONTRACT,
        "anthropic-prod",
        start=anthropic_start,
        end=add_months(anthropic_start, 12),
        auto_renew=True,
        renewal_term_months=12,
        notice_days=90,
        owner="procurement@demo.example",
        notes="Enterprise agreement signed for the support agent's launch; volume did not follow.",
    )
    projected = contract_status(anthropic, today=today).projected
    _commit(anthropic, rounded_up(projected * Decimal("1.6"), Decimal(10_000)))

    openai_start = today - dt.timedelta(days=90)
    openai = _contract(
        ON_TRACK_CONTRACT,
        "openai-prod",
        start=openai_start,
        end=add_months(openai_start, 12),
        auto_renew=False,
        notice_days=30,
        owner="platform@demo.example",
        notes="Scale tier commitment sized on the first quarter's usage.",
    )
    _commit(openai, rounded_up(contract_status(openai, today=today).projected, Decimal(1_000)))

    bedrock_start = add_months(month_of(today), -3)
    bedrock = _contract(
        MONTHLY_CONTRACT,
        "bedrock-us-east-1",
        start=bedrock_start,
        end=add_months(bedrock_start, 12),
        commitment_basis=CommitmentBasis.MONTHLY,
        auto_renew=True,
        notice_days=30,
        owner="cloud@demo.example",
        notes="AWS private pricing: a monthly Bedrock spend commitment.",
    )
    this_month = next(p for p in contract_status(bedrock, today=today).periods if p.start <= today < p.end)
    _commit(bedrock, (this_month.projected * Decimal("0.8")).quantize(Decimal(100)))  # forecast to go over it
    return [_contract_line(contract, today) for contract in (anthropic, openai, bedrock)]


def _contract(name: str, account: str, **values):
    """Create or update a demo contract covering one account, through the contract service (the write path of
    the form, the API and apply_config), committing 0 until its figures are known."""
    from finops.contracts.services import contract_create, contract_update
    from finops.models import Contract

    covered = Account.objects.select_related("provider").get(name=account)
    fields = {
        "provider": covered.provider,
        "accounts": [covered],
        "currency": settings.FINOPS_REPORTING_CURRENCY,
        "commitment": Decimal(0),
        **values,
    }
    existing = Contract.objects.filter(name=name).first()
    if existing is None:
        return contract_create(by=None, name=name, **fields)
    return contract_update(contract=existing, by=None, **fields)


def rounded_up(amount: Decimal, step: Decimal) -> Decimal:
    """Up to a multiple of `step` (Decimal's // truncates toward zero, so -(-a // s) would round down)."""
    return (amount / step).to_integral_value(rounding=ROUND_CEILING) * step


def _commit(contract, amount: Decimal) -> None:
    from finops.contracts.services import contract_update

    contract_update(contract=contract, by=None, commitment=amount)


def _contract_line(contract, today: dt.date) -> dict:
    from finops.contracts.selectors import contract_status

    status = contract_status(contract, today=today)
    return {
        "name": contract.name,
        "basis": contract.get_commitment_basis_display(),
        "committed": status.committed,
        "consumed": status.consumed,
        "projected": status.projected,
        "status": status.status,
        "status_label": status.status_label,
        "notice_deadline": status.notice_deadline,
        "auto_renew": contract.auto_renew,
        "renewal_advice": status.renewal_advice,
    }
