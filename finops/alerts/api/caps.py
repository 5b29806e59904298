"""REST API v1, spend caps: the same service as the cap form and apply_config (finops.alerts.services.caps). Members
see their teams' caps; admins and the cap's team lead change it."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.alerts import serializers
from finops.alerts.selectors.caps import cap_statuses
from finops.alerts.services import caps as cap_service
from finops.core import access
from finops.web.period import today_utc


def _cap_payload(caps, user):
    statuses = cap_statuses(list(caps), today=today_utc())
    return [serializers.CapSerializer(serializers.CapSerializer.from_status(s, user)).data for s in statuses]


def _cap_write(call, **kwargs):
    try:
        return call(**kwargs)
    except cap_service.CapInvalid as exc:
        raise ValidationError(exc.errors) from None


class CapList(APIView):
    """Caps the user may see (members: their teams' caps), with this period's spend, forecast and status."""

    @extend_schema(responses=serializers.CapSerializer(many=True), summary="List caps")
    def get(self, request):
        return Response(_cap_payload(access.visible_caps(request.user), request.user))

    @extend_schema(
        request=serializers.CapWriteSerializer, responses={201: serializers.CapSerializer}, summary="Create a cap"
    )
    def post(self, request):
        if not access.can_create_caps(request.user):
            raise PermissionDenied("Only admins and team leads create caps.")
        body = serializers.CapWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        cap = _cap_write(cap_service.cap_create, by=request.user, **body.validated_data)
        return Response(_cap_payload([cap], request.user)[0], status=201)


class CapDetail(APIView):
    """One cap; another team's cap answers 404. PUT replaces every field, PATCH the fields given."""

    def _cap(self, request, pk):
        return get_object_or_404(access.visible_caps(request.user), pk=pk)

    def _writable(self, request, pk):
        cap = self._cap(request, pk)
        if not access.can_write_cap(request.user, cap):
            raise PermissionDenied("Only admins and the cap's team lead change it.")
        return cap

    @extend_schema(responses=serializers.CapSerializer, summary="A cap and its spend this period")
    def get(self, request, pk):
        return Response(_cap_payload([self._cap(request, pk)], request.user)[0])

    def _update(self, request, pk, partial):
        cap = self._writable(request, pk)
        body = serializers.CapWriteSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        cap = _cap_write(cap_service.cap_update, cap=cap, by=request.user, **body.validated_data)
        return Response(_cap_payload([cap], request.user)[0])

    @extend_schema(request=serializers.CapWriteSerializer, responses=serializers.CapSerializer, summary="Replace a cap")
    def put(self, request, pk):
        return self._update(request, pk, partial=False)

    @extend_schema(request=serializers.CapWriteSerializer, responses=serializers.CapSerializer, summary="Change a cap")
    def patch(self, request, pk):
        return self._update(request, pk, partial=True)

    @extend_schema(responses={204: None}, summary="Delete a cap")
    def delete(self, request, pk):
        cap_service.cap_delete(cap=self._writable(request, pk), by=request.user)
        return Response(status=204)
