"""Which HTTP methods a page answers (docs/access.md): a page that only shows answers GET and HEAD (`require_safe`);
a form shows on GET and submits with POST; an action is a POST (`require_POST`). Anything else is a 405, before
the view runs, so an unsafe method never reaches a view that was not written for it."""

from django.views.decorators.http import require_http_methods

require_form_methods = require_http_methods(["GET", "HEAD", "POST"])
