"""Provider contracts and commitments (issue 11), one domain in one folder (issue 27): models, selectors (a
contract's figures), services (the one write path), forms and views (the pages), serializers and api, tables and
the FOCUS export. Its alert kinds are in finops/alerts/ (docs/architecture.md, "Domain packages")."""
