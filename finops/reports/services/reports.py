"""Writes of the monthly TCO report: publishing a month's snapshot (one write path for the page, the command and
the schedule that sends the report by email)."""

from django.db import IntegrityError, transaction
from django.db.models import Max, OuterRef, Subquery

from finops.models import Account, IngestRun, ReportSnapshot
from finops.reports.selectors.tco_report import TcoReport


def latest_runs() -> dict[str, int]:
    """{account id: id of its latest finished run}: what a snapshot was made from, so a restatement can name the
    sources whose runs came after it."""
    finished = IngestRun.objects.filter(account=OuterRef("pk"), finished_at__isnull=False).order_by(
        "-finished_at", "-id"
    )
    return {
        str(pk): run
        for pk, run in Account.objects.annotate(run=Subquery(finished.values("id")[:1])).values_list("pk", "run")
        if run is not None
    }


def report_publish(*, report: TcoReport, by=None) -> ReportSnapshot:
    """Store `report` as the next version of its month. Two publishers at once: the unique (month, version)
    makes one of them retry with the next number, so no version is overwritten."""
    for _ in range(5):
        try:
            with transaction.atomic():
                version = (ReportSnapshot.objects.filter(month=report.month).aggregate(v=Max("version"))["v"] or 0) + 1
                return ReportSnapshot.objects.create(
                    month=report.month,
                    version=version,
                    generated_at=report.generated_at,
                    published_by=by,
                    provisional=report.provisional,
                    figures=report.as_json(),
                    source_runs=latest_runs(),
                )
        except IntegrityError:
            continue
    raise RuntimeError(f"could not publish {report.key}: too many concurrent publications")
