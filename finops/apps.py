from django.apps import AppConfig


class FinopsConfig(AppConfig):
    name = "finops"
    verbose_name = "Inference FinOps"
