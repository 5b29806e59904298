import json

from django.core.management.base import BaseCommand

from finops.forecast.backtest import backtest


class Command(BaseCommand):
    help = (
        "Back-test the spend forecast (finops.forecast.projection) on the complete past months of this database: "
        "the mean absolute percentage error of the month-end forecast made on the 10th and on the 20th, for the "
        "organisation and for each team, beside the 7-day run rate's, and how often the month's actual total "
        "fell inside the forecast's range (docs/forecast.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            nargs="+",
            default=[10, 20],
            help="Days of the month the forecast is made on (default: 10 20).",
        )
        parser.add_argument("--json", action="store_true", help="The figures and every month's forecasts as JSON.")

    def handle(self, *args, days, json: bool = False, **options):
        result = backtest(days=days)
        if json:
            self.stdout.write(_dumps(result))
            return
        self.stdout.write(f"Months back-tested: {', '.join(result['months']) or 'none'}")
        self.stdout.write(
            f"{'scope':<14}{'made on':>8}{'cases':>7}{'forecast MAPE':>15}{'7-day run rate MAPE':>21}{'in range':>10}"
        )
        for row in result["summary"]:
            self.stdout.write(
                f"{row['scope']:<14}{'day ' + str(row['day']):>8}{row['cases']:>7}"
                f"{_pct(row['forecast_mape']):>15}{_pct(row['run_rate_mape']):>21}{_pct(row['in_range']):>10}"
            )


def _pct(value) -> str:
    return "—" if value is None else f"{value:.1%}"


def _dumps(result: dict) -> str:
    return json.dumps(result, indent=2, default=str)
