"""REST API v1, alert channels (issue 25): the channels page's rules. Admins list and write every channel, a team
lead their teams'; anyone else gets 404, as for what one may not see. A channel's URL and webhook secret are
write-only: answers show the URL's scheme and host (`destination`) and whether a secret is set, never either. Every
write goes through finops.alerts.services.channels (the page and the Django admin use it too)."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.alerts.services.channels import channel_delete, channel_save, channel_shown
from finops.core import access
from finops.models import AlertKind, ChannelKind, Team


class ChannelSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=ChannelKind.values)
    team = serializers.CharField(allow_null=True, help_text="The owning team's slug; null: the organisation's.")
    destination = serializers.CharField(
        help_text="An email channel's addresses and roles; a webhook, Slack or Teams channel's URL as its scheme "
        "and host only (never its path, query or credentials)."
    )
    secret_set = serializers.BooleanField(help_text="Whether a webhook signing secret is stored (never returned).")
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=AlertKind.values), help_text="The alert kinds it takes; []: every kind."
    )
    is_default = serializers.BooleanField(help_text="Takes its owner's alerts that nothing chose a channel for.")
    for_cap = serializers.IntegerField(
        allow_null=True, help_text="The cap whose recipients or webhook it is (changed on the cap); null otherwise."
    )

    @staticmethod
    def of(channel, user) -> dict:
        return {
            "id": channel.id,
            "name": channel.name,
            "kind": channel.kind,
            "team": channel.team.slug if channel.team_id else None,
            "destination": channel_shown(user, channel),
            "secret_set": bool(channel.secret_ciphertext),
            "kinds": list(channel.kinds),
            "is_default": channel.is_default,
            "for_cap": channel.for_cap_id,
        }


class ChannelWriteSerializer(serializers.Serializer):
    """What a client sends; finops.alerts.services.channels validates the values (egress policy, control characters)."""

    name = serializers.CharField(max_length=120, trim_whitespace=False)
    kind = serializers.CharField(help_text="email, webhook, slack or teams.")
    team = serializers.CharField(
        required=False, allow_null=True, help_text="The owning team's slug; null: the organisation's (admins only)."
    )
    addresses = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Email channels: addresses and roles (role:team_leads, role:finance, role:admins, "
        "role:contract_owner).",
    )
    url = serializers.CharField(
        required=False,
        write_only=True,
        help_text="Webhook, Slack, Teams: the http(s) URL, a public address unless an admin allows the network. "
        "Write-only; omit to keep the current one.",
    )
    secret = serializers.CharField(
        required=False,
        write_only=True,
        help_text="Webhooks: the HMAC-SHA256 signing secret; stored encrypted, never returned. Omit to keep it.",
    )
    kinds = serializers.ListField(child=serializers.CharField(), required=False, help_text="[] or omitted: every kind.")
    is_default = serializers.BooleanField(required=False)


def _editor_or_404(user):
    if not (access.is_admin(user) or access.lead_teams(user).exists()):
        raise Http404
    return access.writable_channels(user).select_related("team").order_by("team__name", "name", "id")


def _team(slug, user):
    if slug in (None, ""):
        return None
    team = access.visible_teams(user).filter(slug=slug).first() if not access.is_admin(user) else None
    team = team or (Team.objects.filter(slug=slug).first() if access.is_admin(user) else None)
    if team is None:
        raise ValidationError({"team": [f"No team with the slug {slug!r}."]})
    return team


def _save(request, channel=None, *, partial: bool):
    body = ChannelWriteSerializer(data=request.data, partial=partial)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    current = {}
    if channel is not None:
        current = {
            "name": channel.name,
            "kind": channel.kind,
            "team": channel.team.slug if channel.team_id else None,
            "addresses": channel.addresses,
            "kinds": channel.kinds,
            "is_default": channel.is_default,
        }
    values = {**current, **data}
    if channel is not None and channel.for_cap_id is not None:
        raise ValidationError({"channel": ["It is a cap's recipients or webhook: change them on the cap."]})
    try:
        return channel_save(
            by=request.user,
            channel=channel,
            name=values.get("name"),
            kind=values.get("kind"),
            team=_team(values.get("team"), request.user),
            addresses=values.get("addresses"),
            url=data.get("url"),
            secret=data.get("secret"),
            kinds=values.get("kinds"),
            is_default=values.get("is_default", False),
        )
    except DjangoValidationError as exc:
        raise ValidationError(exc.message_dict) from None
    except DjangoPermissionDenied as exc:
        raise PermissionDenied(str(exc)) from None


class ChannelList(APIView):
    """The channels the user may edit (admins: all; a team lead: their teams'); anyone else gets 404."""

    permission_classes = [access.EditsChannels]

    @extend_schema(responses=ChannelSerializer(many=True), summary="List alert channels")
    def get(self, request):
        return Response([ChannelSerializer.of(c, request.user) for c in _editor_or_404(request.user)])

    @extend_schema(
        request=ChannelWriteSerializer,
        responses={201: ChannelSerializer, 400: OpenApiResponse(description="Every bad field named.")},
        summary="Create an alert channel",
    )
    def post(self, request):
        _editor_or_404(request.user)
        channel = _save(request, partial=False)
        return Response(ChannelSerializer.of(channel, request.user), status=201)


class ChannelDetail(APIView):
    """One channel the user may edit; any other answers 404. PUT replaces its fields, PATCH the fields given."""

    permission_classes = [access.EditsChannels]

    def _channel(self, request, pk):
        return get_object_or_404(_editor_or_404(request.user), pk=pk)

    @extend_schema(responses=ChannelSerializer, summary="An alert channel")
    def get(self, request, pk):
        return Response(ChannelSerializer.of(self._channel(request, pk), request.user))

    @extend_schema(request=ChannelWriteSerializer, responses=ChannelSerializer, summary="Replace an alert channel")
    def put(self, request, pk):
        channel = _save(request, self._channel(request, pk), partial=False)
        return Response(ChannelSerializer.of(channel, request.user))

    @extend_schema(request=ChannelWriteSerializer, responses=ChannelSerializer, summary="Change an alert channel")
    def patch(self, request, pk):
        channel = _save(request, self._channel(request, pk), partial=True)
        return Response(ChannelSerializer.of(channel, request.user))

    @extend_schema(responses={204: None}, summary="Delete an alert channel")
    def delete(self, request, pk):
        try:
            channel_delete(channel=self._channel(request, pk), by=request.user)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from None
        return Response(status=204)
