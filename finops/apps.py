from django.apps import AppConfig


class FinopsConfig(AppConfig):
    name = "finops"
    verbose_name = "Inference FinOps"

    def ready(self):
        # Every log record carries the ingest context fields (finops/core/logs.py), whichever handler formats it.
        from finops.core.logs import install_record_factory

        install_record_factory()
        # The demo's SQLite gets the aggregates the rollups use (bit_or).
        from finops.core.sqlite_functions import install

        install()
