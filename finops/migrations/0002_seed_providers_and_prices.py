from django.db import migrations


def seed(apps, schema_editor):
    from finops.prices.services import price_catalog_load
    from finops.sources.services.providers import providers_seed

    Provider = apps.get_model("finops", "Provider")
    ModelPrice = apps.get_model("finops", "ModelPrice")
    providers_seed(provider_model=Provider)
    price_catalog_load(provider_model=Provider, price_model=ModelPrice)


class Migration(migrations.Migration):
    dependencies = [("finops", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
