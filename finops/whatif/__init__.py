"""The what-if across providers (issue 13), one domain in one folder (issue 27): offerings, families and routing
policies (models), the catalogue and the comparison (selectors, inputs), their one write path (services), the
calculator (pure), model families, routing as LiteLLM config, the pages (views, forms), the API and the tables."""
