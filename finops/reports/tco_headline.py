"""The report's first paragraph in words (issue 24), generated from its own tables, so every number in it is a
cell of a table below (the summary, the movers, budget against actual, commitments, renewals) and a published
version's paragraph never changes. No ORM here: a TcoReport's rows (live or a snapshot's) only.

It says: the month's total and its change from last month; the two or three reasons (the largest increases, the
largest decrease); the budget position (teams over their cap, teams without one); and what needs a decision
(closed commitment periods not met, contracts at risk, notice deadlines within 90 days, caps breached).
"""

from decimal import Decimal

from finops.core import display

DECISION_DAYS = 90  # a notice deadline within this many days of the month's end needs a decision now
REASONS = 3


def _signed(value, currency=None) -> str:
    return ("+" if value > 0 else "") + display.money_exact(value, currency)


def headline(report) -> list[str]:
    """The paragraph's sentences (empty for a month without spend)."""
    summary = report.summary
    if not report.has_data or summary.get("cost") is None:
        return []
    sentences = [_total(report, summary)]
    reasons = _reasons(report.rows("movers"))
    if reasons:
        sentences.append(reasons)
    budget = _budget(report.rows("budgets"))
    if budget:
        sentences.append(budget)
    decisions = _decisions(report)
    sentences.append("Needs a decision: " + "; ".join(decisions) + "." if decisions else "Nothing needs a decision.")
    return sentences


def _total(report, summary) -> str:
    text = f"{report.label}: {display.money_exact(summary['cost'])} spent"
    if summary.get("change") is not None and summary.get("previous_cost") is not None:
        text += (
            f", {display.percent_change(summary['change'])} from {report.notes.get('compare_label', 'last month')}"
            f" ({display.money_exact(summary['previous_cost'])})"
        )
    return text + "."


def _reasons(movers: list[dict]) -> str:
    ups = [m for m in movers if m["change"] > 0][:REASONS]
    downs = [m for m in movers if m["change"] < 0][:1]
    parts = []
    if ups:
        parts.append(
            "the largest increases: " + ", ".join(f"{m['label']} {_signed(m['change'])} ({_driver(m)})" for m in ups)
        )
    if downs:
        parts.append(
            "the largest decrease: " + ", ".join(f"{m['label']} {_signed(m['change'])} ({_driver(m)})" for m in downs)
        )
    return ("Why: " + "; ".join(parts) + ".") if parts else ""


def _driver(mover: dict) -> str:
    """The effect that explains most of a mover's change: "mostly volume +$1,732.34"."""
    name = max(("volume", "price", "mix"), key=lambda k: abs(mover[k] or Decimal(0)))
    return f"mostly {name} {_signed(mover[name])}"


def _budget(rows: list[dict]) -> str:
    over = [r for r in rows if r.get("budget") is not None and r["variance"] < 0]
    under = [r for r in rows if r.get("budget") is not None and r["variance"] >= 0]
    without = [r for r in rows if r.get("budget") is None]
    parts = [f"{r['label']} over its budget by {display.money_exact(-r['variance'])}" for r in over]
    if under:
        parts.append(f"{len(under)} team{'s' if len(under) != 1 else ''} within budget")
    if without:
        parts.append(f"{len(without)} team{'s' if len(without) != 1 else ''} without a cap")
    return ("Budgets: " + ", ".join(parts) + ".") if parts else ""


def _decisions(report) -> list[str]:
    found = []
    for row in report.rows("commitments"):
        if row.get("projected") is None and row.get("status_status") == "shortfall":
            found.append(f"{row['label']} {row['status'][0].lower()}{row['status'][1:]}")
        elif row.get("status_status") in ("shortfall", "notice_passed"):
            found.append(f"{row['label']}: {row['status'].lower()}")
    for row in report.rows("renewals"):
        if row.get("days_left") is not None and row["days_left"] <= DECISION_DAYS:
            found.append(
                f"{row['label']} renews unless notice by {row['notice_deadline']:%d %B %Y} "
                f"({row['days_left']} days after the month's end)"
            )
    for row in report.rows("caps"):
        if row.get("status_status") == "breached":
            found.append(f"cap {row['label']}: {row['status'][0].lower()}{row['status'][1:]}")
    return found
