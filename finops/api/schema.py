"""The OpenAPI schema documents every answer an operation can give, refusals included (issue 16: schemathesis checks
that each status code and body is documented).

Each view documents its own successes and its particular errors; the refusals every operation shares are added here
from what the operation is, so a new endpoint gets them without anyone remembering to:

- 401 everywhere: every operation needs a signed-in caller (docs/access.md).
- 429 everywhere: the API is throttled per user (settings.REST_FRAMEWORK's throttle rates).
- 400 where the caller sends something to validate: query parameters (pagination included) or a body.
- 415 where there is a body: another media type than the ones the operation parses.
- 403 on unsafe methods: a reader (finance, a plain member) who may see the object may not change it.
- 404 where a path names an object (absent, or another team's) or the operation is hidden from some roles
  (finops.core.access.HiddenFromOthers: accounts, runs, rules, contracts are not even confirmed to exist to members).
"""

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from finops.core.access import HiddenFromOthers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, for a person.")


BAD_REQUEST = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="A parameter or a field is invalid: the body maps each "
    "to its messages (`detail` or `errors` for the request as a whole).",
)
REFUSALS = {
    "401": "Not signed in: send `Authorization: Token <token>` (or a session cookie).",
    "403": "Signed in, and you may see this, but not change it.",
    "404": "No such object, or none you may see (another team's, or something only admins and finance see).",
    "415": "The body's media type is not one this operation reads.",
    "429": "Too many requests: wait the `Retry-After` seconds.",
}
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


class AutoSchema(SpectacularAutoSchema):
    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        responses = operation.setdefault("responses", {})
        for code in self._refusal_codes(operation):
            answer = BAD_REQUEST if code == "400" else OpenApiResponse(ErrorSerializer, description=REFUSALS[code])
            responses.setdefault(code, self._get_response_for_code(answer, code, media_types=["application/json"]))
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _refusal_codes(self, operation) -> list[str]:
        parameters = operation.get("parameters", [])
        has_body = "requestBody" in operation
        codes = ["401", "429"]
        if has_body or any(p.get("in") == "query" for p in parameters):
            codes.append("400")
        if has_body:
            codes.append("415")
        if self.method in UNSAFE:
            codes.append("403")
        hidden = any(isinstance(p, HiddenFromOthers) for p in self.view.get_permissions())
        if hidden or any(p.get("in") == "path" for p in parameters):
            codes.append("404")
        return codes
