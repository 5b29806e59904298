"""The routing savings as table rows (finops.reports.whatif_tables.SAVINGS): the Savings page, its CSV and the
monthly TCO report read the same rows."""

from finops.core import display

from .whatif import SavingsReport

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
