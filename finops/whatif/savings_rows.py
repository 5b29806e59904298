"""The routing savings as table rows (finops.whatif.tables.SAVINGS): the Savings page, its CSV and the
monthly TCO report read the same rows; and the Savings page's report, precomputed (issue 28: its p95 ≤ 200 ms at
10M lines).

The page's report is finops.whatif.selectors.savings over the whole organisation (every workload, the last 30
days), computed once and kept in the cache under a fingerprint of everything it reads (finops.whatif.
inputs), then narrowed to the workloads the user sees: a member's report is the organisation's rows of their
teams' workloads, the same figures savings(user, today) computes (each part is one workload's, priced the same
whoever looks). An import, a re-attribution or an edit changes the fingerprint, so it shows at once; only the first
read after a change computes.
"""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.core.cache import cache

from finops.core import access, display
from finops.whatif.inputs import fingerprint
from finops.whatif.selectors import SavingsReport, basis_words, savings

VERDICT = {True: "Meets", False: "Fails", None: "Unknown"}


def latency_text(result) -> str:
    if result.latency_seconds is None:
        return display.DASH
    return ("≥ " if result.latency_lower_bound else "") + display.seconds(result.latency_seconds)


def policy_text(policy) -> str:
    if policy is None:
        return display.DASH
    text = f"{policy.primary.provider.name} · {display.model_name(policy.primary.model)}"
    if policy.fallback:
        text += f" → {policy.fallback.provider.name} · {display.model_name(policy.fallback.model)}"
    return f"{text} ({policy.get_constraint_display().lower()})"


def saving_rows(report: SavingsReport) -> list[dict]:
    rows = []
    for row in report.rows:
        best = row.best
        rows.append(
            {
                "workload": row.workload.name,
                "url": f"/whatif/?workload={row.workload.slug}",
                "team": row.workload.team.name,
                "family": row.family,
                "today_cost": row.today_cost,
                "best": best.offering.label if best else (row.note or "None meets the SLA"),
                "best_cost": best.monthly_cost if best else None,
                "saving": row.saving if best else None,
                "latency": latency_text(best) if best else display.DASH,
                "sla": (VERDICT[best.meets_sla] if best.sla_kind != "none" else "No SLA") if best else display.DASH,
                "policy": policy_text(row.policy),
            }
        )
    return rows


PAGE_CACHE_SECONDS = 6 * 3600  # a fingerprint changes with every input; the timeout only bounds what is kept
PAGE_ROWS = 100  # the page shows the biggest savings; the CSV has every row


@dataclass(frozen=True)
class SavingsPage:
    """The Savings page's figures: the table's rows (saving_rows) and the tiles' totals, as SavingsReport's."""

    rows: list[dict]
    today_total: Decimal
    saving_total: Decimal
    basis: str
    has_policies: bool

    @property
    def saving_share(self) -> Decimal | None:
        return self.saving_total / self.today_total if self.today_total else None


def page_savings(user, today: dt.date) -> SavingsPage:
    """The Savings page for `user`: the organisation's report (savings(None, today)), precomputed as table rows
    (module docstring), narrowed to the workloads the user sees — the rows and totals savings(user, today) gives."""
    key = f"whatif:savings-page:v1:{fingerprint(today)}"
    found = cache.get(key)
    if found is None:
        whole = savings(None, today)
        found = {
            "rows": [
                (row.workload.id, row.saving, row.policy is not None, table_row)
                for row, table_row in zip(whole.rows, saving_rows(whole), strict=True)
            ],
            "today": whole.today_by_workload,
        }
        cache.set(key, found, PAGE_CACHE_SECONDS)
    visible = set(access.visible_workloads(user).values_list("id", flat=True))
    mine = [entry for entry in found["rows"] if entry[0] in visible]
    return SavingsPage(
        rows=[table_row for *_, table_row in mine],
        today_total=sum((cost for workload, cost in found["today"].items() if workload in visible), Decimal(0)),
        saving_total=sum((saving for _, saving, _, _ in mine), Decimal(0)),
        basis=basis_words(today),
        has_policies=any(policy for _, _, policy, _ in mine),
    )
