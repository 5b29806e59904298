"""Template side of finops.display: filters for single figures, tags for cost cells and tables of figures."""

from django import template

from finops import display
from finops.reports import tables as specs

register = template.Library()

register.filter("money", display.money_exact)  # tables: "$1,043.12"
register.filter("money_short", display.money_compact)  # cards: "$1.2k"
register.filter("tokens", display.tokens_compact)
register.filter("count", display.count)
register.filter("requests", display.requests)
register.filter("percent", display.percent_change)
register.filter("share", display.share)
register.filter("per_mtok", display.per_mtok)
register.filter("price", display.price)
register.filter("per_outcome", display.per_outcome)  # "$0.42", "$0.0042"
register.filter("duration", display.duration)
register.filter("model_name", display.model_name)


@register.simple_tag
def currency_symbol():
    return display.currency_symbol()


@register.simple_tag
def cost(amount, unpriced_tokens=0, compact=False):
    """A cost that never hides its unknown part: {% cost totals.cost totals.unpriced_tokens %}."""
    return specs.money_html(amount, unpriced_tokens, compact=compact)


@register.inclusion_tag("finops/partials/data_table.html", takes_context=True)
def data_table(context, table, rows, limit=None):
    """A table of figures from its spec (finops.reports.tables): the first column links to row["url"] and
    is in italics where row["muted"]; row["action"] = (text, url) adds a link after it."""
    shown = rows[:limit] if limit else rows
    body = []
    for row in shown:
        cells = []
        for index, column in enumerate(table.page_columns):
            cells.append({"html": specs.html_cell(column, row), "numeric": column.numeric,
                          "url": row.get("url") if index == 0 else None, "muted": index == 0 and row.get("muted"),
                          "action": row.get("action") if index == 0 else None,
                          "highlight": index == 0 and row.get("highlight")})
        body.append(cells)
    return {"table": table, "body": body, "more": len(rows) - len(shown), "csv_url": csv_url(context, table.name)}


@register.simple_tag(takes_context=True)
def csv_url(context, name):
    """This page's query (its period and filters) with csv=<name>."""
    request = context.get("request")
    query = request.GET.copy() if request is not None else None
    if query is None:
        return f"?csv={name}"
    query["csv"] = name
    return f"?{query.urlencode()}"


@register.filter
def get_item(mapping, key):
    """mapping[key] in a template (a QueryDict gives its last value)."""
    return mapping.get(key) if hasattr(mapping, "get") else None
