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
        # Every team has a default alert channel to its leads (issue 25), however the team is made.
        from django.db.models.signals import post_save

        from finops.alerts.services.channels import team_created

        from .models import Team

        post_save.connect(team_created, sender=Team, dispatch_uid="finops.team_default_channel")
        # Every table bumps the data version the page cache keys on (finops/web/data_version.py), tables added by a
        # later migration included: the triggers are (re)installed after each migrate.
        from django.db.models.signals import post_migrate

        from finops.web.data_version import install_triggers

        post_migrate.connect(install_triggers, sender=self, dispatch_uid="finops.data_version_triggers")
