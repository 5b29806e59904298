"""Template context shared by every page: the navigation, which grows with the product and the role."""

from django.urls import reverse
from django.utils import timezone

from finops.core import access

from .period import period_from_request, with_period

PERIOD_PAGES = {"Overview", "Teams", "Workloads", "Providers"}


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    items = [
        ("Overview", reverse("overview")),
        ("Teams", reverse("team-list")),
        ("Workloads", reverse("workload-list")),
        ("Providers", reverse("provider-list")),
        ("Explore", reverse("explore")),
        ("Caps", reverse("cap-list")),
        ("Scorecard", reverse("scorecard")),
    ]
    if access.can_see_contracts(user):
        items.append(("Contracts", reverse("contract-list")))
    if access.can_see_reports(user):
        items.append(("Reports", reverse("report-index")))
    if access.can_see_sources(user):
        items.append(("Rules", reverse("rule-list")))
        items.append(("Sources", reverse("source-list")))
    # Savings holds the what-if calculator and the offerings (their pages link each other): one item, so the
    # menu stays one line on a laptop.
    items.append(("Savings", reverse("savings")))
    items.append(
        ("Alerts", reverse("alert-list"))
    )  # everyone: members see their teams' alerts (finops.alerts.selectors.alerts)
    current = request.path
    period = period_from_request(request)  # the spend pages keep the chosen period while moving between them
    return {
        "nav_items": [
            {
                "label": label,
                "url": with_period(url, period) if label in PERIOD_PAGES else url,
                "active": current == url
                or (url != "/" and current.startswith(url))
                or (label == "Savings" and current.startswith((reverse("whatif"), reverse("offering-list")))),
            }
            for label, url in items
        ],
        "is_admin": access.is_admin(user),
        "display_zone": timezone.get_current_timezone_name(),
    }
