from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The benches (`make bench*`, `manage.py bench_*`): figures measured on generated data, beside a control from
    the same run. They use the product (finops, ingest); the product never imports them (import-linter)."""

    name = "bench"
    verbose_name = "Benchmarks"
