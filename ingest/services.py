"""Ingestion: parse → price → replace the window's lines → roll up, all or nothing (DESIGN.md data flow).

A run replaces exactly the periods it read for its account, in one transaction: importing the same
file twice, or a restated one, leaves each total as the source says (invariant 3). A failed run writes
nothing and says why on the run and on the account.
"""

import datetime as dt
import logging
from collections import Counter
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from finops.modelids import normalise_model
from finops.models import Account, CostBasis, IngestRun, Provider, UsageLine
from finops.services.fx import FxConverter, MissingFxRate
from finops.services.prices import PriceBook, Tokens, cost_from_price
from finops.services.rollups import rollup_rebuild

from .providers.base import ProviderError, UsageRow
from .providers.parsing import day_start
from .providers.registry import file_source_for

log = logging.getLogger(__name__)
BATCH_SIZE = 5000


class IngestError(Exception):
    """A run cannot complete; the message is shown to the user as it is."""


Window = tuple[dt.datetime, dt.datetime]


def utc_days(start: dt.datetime, end: dt.datetime) -> set[dt.date]:
    """The UTC days the half-open period [start, end) touches."""
    day = start.astimezone(dt.UTC).date()
    last = (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    days = set()
    while day <= last:
        days.add(day)
        day += dt.timedelta(days=1)
    return days


def days_of(rows: Iterable[UsageRow]) -> list[Window]:
    """The whole UTC days the rows start in: what a file import replaces for its account."""
    days = sorted({row.period_start.astimezone(dt.UTC).date() for row in rows})
    return [(day_start(d), day_start(d + dt.timedelta(days=1))) for d in days]


def usage_file_import(*, account: Account, stream, file_name: str, trigger: str = IngestRun.Trigger.UPLOAD) -> IngestRun:
    """Import one export file for `account`. Returns the run; its status says whether it succeeded."""
    run = IngestRun.objects.create(
        account=account, trigger=trigger, status=IngestRun.Status.RUNNING, file_name=file_name, started_at=timezone.now()
    )
    try:
        rows = list(file_source_for(account.connector).parse(stream, file_name=file_name))
        run.lines_read = len(rows)
        windows = days_of(rows)
        if windows:
            run.window_start, run.window_end = windows[0][0], windows[-1][1]
        run.lines_written, run.lines_replaced = usage_window_write(account=account, run=run, windows=windows, rows=rows)
    except (ProviderError, IngestError, MissingFxRate, LookupError, UnicodeDecodeError) as exc:
        _finish(run, error=str(exc))
    else:
        _finish(run)
    return run


def _finish(run: IngestRun, *, error: str = "") -> None:
    now = timezone.now()
    run.status = IngestRun.Status.FAILED if error else IngestRun.Status.SUCCEEDED
    run.error = error
    run.finished_at = now
    if error:
        run.lines_written = run.lines_replaced = 0
        log.warning("ingest run %s for account %s failed: %s", run.id, run.account_id, error)
    run.save()
    account = run.account
    account.last_sync_at = now
    if error:
        account.last_error, account.last_error_at = error, now
    else:
        account.last_success_at, account.last_error = now, ""
    account.save(update_fields=["last_sync_at", "last_success_at", "last_error", "last_error_at", "updated_at"])


def usage_window_write(*, account: Account, run: IngestRun, windows: list[Window], rows: list[UsageRow]) -> tuple[int, int]:
    """Replace the account's lines in `windows` with `rows`; returns (written, replaced). All or nothing."""
    lines = _usage_lines(account=account, run=run, windows=windows, rows=rows)
    with transaction.atomic():
        replaced = 0
        touched_days = set()
        for start, end in windows:
            replaced += UsageLine.objects.filter(account=account, period_start__gte=start, period_start__lt=end).delete()[0]
            touched_days |= utc_days(start, end)
        UsageLine.objects.bulk_create(lines, batch_size=BATCH_SIZE)
        rollup_rebuild(days=touched_days, account_ids=[account.id])
    return len(lines), replaced


def _usage_lines(*, account: Account, run: IngestRun, windows: list[Window], rows: list[UsageRow]) -> list[UsageLine]:
    """Price, convert and key every row before anything is written, so a bad row fails the whole run."""
    providers = {p.slug: p for p in Provider.objects.all()}
    price_books: dict[int, PriceBook] = {}
    fx = FxConverter()
    occurrences: Counter[str] = Counter()
    lines = []
    for row in rows:
        if not any(start <= row.period_start < end for start, end in windows):
            raise IngestError(f"{row.source_ref}: period {row.period_start.isoformat()} lies outside the window read")
        provider = providers.get(row.provider_slug) if row.provider_slug else account.provider
        if provider is None:
            raise IngestError(f"{row.source_ref}: unknown provider {row.provider_slug!r} (add it first)")
        model = normalise_model(row.model_raw)
        day = row.period_start.astimezone(dt.UTC).date()
        cost, currency, basis = row.cost, row.currency, CostBasis.BILLED
        if cost is None:
            book = price_books.setdefault(provider.id, PriceBook(provider))
            price = book.price_on(model, day)
            tokens = Tokens(row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens)
            if price is None:
                basis, currency = CostBasis.UNPRICED, row.currency
            else:
                batch = row.service_tier.lower() == "batch"
                cost, currency, basis = cost_from_price(price, tokens, batch=batch), price.currency, CostBasis.ESTIMATED
        reporting_cost = None if cost is None else fx.to_reporting(cost, currency, day)
        identity = row.identity()
        # The n-th line with the same identity keeps its own key, so repeats in a source are kept, not merged.
        occurrences[identity] += 1
        line_key = identity if occurrences[identity] == 1 else f"{identity[:56]}{occurrences[identity]:08d}"
        lines.append(
            UsageLine(
                account=account,
                provider=provider,
                ingest_run=run,
                period_start=row.period_start,
                period_end=row.period_end,
                model=model,
                model_raw=row.model_raw,
                service_tier=row.service_tier,
                project_ref=row.project_ref,
                api_key_ref=row.api_key_ref,
                user_ref=row.user_ref,
                tags=row.tags,
                input_tokens=row.input_tokens,
                cached_input_tokens=row.cached_input_tokens,
                cache_write_tokens=row.cache_write_tokens,
                output_tokens=row.output_tokens,
                requests=row.requests,
                cost=cost,
                currency=currency,
                reporting_cost=reporting_cost,
                cost_basis=basis,
                charge_category=row.charge_category,
                line_key=line_key,
            )
        )
    return lines
