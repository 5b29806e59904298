"""Renderers beyond DRF's JSON: the spend report as CSV.

A renderer, not a `format` argument of the view, because DRF already owns `?format=` (URL_FORMAT_OVERRIDE) to
pick a renderer: `?format=csv` (or `Accept: text/csv`) selects this one through DRF's own content negotiation.
"""

import io

from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer

from finops.reports import spend_csv


class SpendCSVRenderer(BaseRenderer):
    """spend_report.as_json rows as CSV: a header row, the same columns, money as plain decimals."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        spend_csv.write_csv(data, out)
        return out.getvalue().encode(self.charset)


class FormatParameterNegotiation(DefaultContentNegotiation):
    """DRF answers an unknown `?format=` with 404, as if the URL did not exist: name the parameter (400) instead."""

    def filter_renderers(self, renderers, format):
        found = [renderer for renderer in renderers if renderer.format == format]
        if not found:
            known = ", ".join(renderer.format for renderer in renderers)
            raise ValidationError({"format": [f"Unknown format “{format}”; the known ones are: {known}."]})
        return found
