"""Template side of finops.core.display: filters for single figures, tags for cost cells and tables of figures."""

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString

from finops.core import display
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
register.filter("forecast", display.forecast)  # "forecast $X (range $L–$H)"


@register.filter
def forecast_short(value):
    """The compact register of `forecast`, for cards: "forecast $95.0k (range $91.2k–$98.8k)"."""
    return display.forecast(value, compact=True)


@register.simple_tag
def currency_symbol():
    return display.currency_symbol()


@register.simple_tag
def cost(amount, unpriced_tokens=0, compact=False):
    """A cost that never hides its unknown part: {% cost totals.cost totals.unpriced_tokens %}."""
    return specs.money_html(amount, unpriced_tokens, compact=compact)


@register.inclusion_tag("finops/partials/data_table.html", takes_context=True)
def data_table(context, table, rows, limit=None, sort=None):
    """A table of figures from its spec (finops.reports.tables): the first column links to row["url"] and
    is in italics where row["muted"]; row["action"] = (text, url) adds a link after it. `sort` ({"key", "dir"}:
    how the view sorted the rows) makes the headers of sortable columns links that sort by them (the server
    sorts: the page's query with sort= and dir=)."""
    shown = rows[:limit] if limit else rows
    columns = table.page_columns
    labels = [conditional_escape(column.title()) for column in columns]
    body = [
        {
            "cells": SafeString(
                "".join(
                    _cell(column, row, first=index == 0, label=labels[index]) for index, column in enumerate(columns)
                )
            ),
            "highlight": bool(row.get("highlight")),
            "total": bool(row.get("total")),
        }
        for row in shown
    ]
    return {
        "table": table,
        "body": body,
        "more": len(rows) - len(shown),
        "csv_url": csv_url(context, table.name),
        "headers": _headers(context, table, sort),
        "folds": specs.has_money(table),
    }


def _cell(column, row: dict, *, first: bool, label: str) -> str:
    """One <td>, built here rather than in the template: a table of hundreds of rows (the scorecard) would spend
    most of its time in template variable lookups. `data-label` is its column's header: on a phone a table with
    money folds each row into a card of labelled figures (app.css), so no amount is ever cut at the screen's edge."""
    content = specs.html_cell(column, row)
    if first:
        if row.get("muted"):
            content = f"<em>{content}</em>"
        if row.get("url"):
            content = f'<a href="{conditional_escape(row["url"])}">{content}</a>'
        if row.get("action"):
            text, url = row["action"]
            content = f'{content} · <a href="{conditional_escape(url)}">{conditional_escape(text)}</a>'
    if column.kind == "money":  # a folded row shows its money right under its name
        return f'<td class="num money" data-label="{label}">{content}</td>'
    return (
        f'<td class="num" data-label="{label}">{content}</td>'
        if column.numeric
        else f'<td data-label="{label}">{content}</td>'
    )


def _headers(context, table, sort) -> list[dict]:
    """Each page column's header; with `sort`, a sortable one links to this page sorted by it (numbers start
    biggest first, text A to Z; the sorted column's link reverses it) and says which way it is sorted."""
    request = context.get("request")
    headers = []
    for column in table.page_columns:
        header = {"column": column, "url": None, "state": None}
        if sort is not None and column.sort and request is not None:
            active = sort.get("key") == column.key
            state = sort.get("dir") if active else None
            first = "desc" if column.numeric else "asc"  # figures biggest first; text A to Z, verdicts worst first
            query = request.GET.copy()
            query.pop("csv", None)
            query["sort"], query["dir"] = column.key, ({"asc": "desc", "desc": "asc"}[state] if state else first)
            header.update(url=f"?{query.urlencode()}", state={"asc": "ascending", "desc": "descending"}.get(state))
        headers.append(header)
    return headers


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
