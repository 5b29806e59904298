"""Template side of who may post outcome counts (finops.core.access), for the upload partial on the workload page."""

from django import template

from finops.core import access

register = template.Library()


@register.filter
def can_write_outcomes(user, workload) -> bool:
    return access.can_write_outcomes(user, workload)
