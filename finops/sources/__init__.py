"""Sources and accounts, one domain in one folder (issue 27): providers, their accounts and the ingest runs that
read them (models.py), one status per account and its freshness (selectors/), the accounts' one write path and the
seeded providers (services/), the Sources pages and their forms (views.py, forms.py). The pipeline that reads a
source and writes its lines is ingest/ (docs/architecture.md, "Domain packages": why the models are here)."""
