from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo organisation (`make demo`, `manage.py demo_env` and `load_demo`, docs/demo.md), loaded through the
    product's real import code. It uses the product; the product never imports it (import-linter)."""

    name = "demo"
    verbose_name = "Demo"
