"""REST API v1, sources: providers, accounts, their runs, imports (an uploaded export) and syncs (a pull now).
Accounts and runs are for those who see the Sources (finops.core.access.SeesSources); others get 404."""

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.api.errors import services_down_response
from finops.core import access
from finops.models import Account, IngestRun, Provider
from finops.sources import serializers
from finops.sources.services.accounts import AccountInvalid, account_focus_services_set
from ingest.lines import IngestError
from ingest.services import QueueUnavailable, sync_now, usage_upload_accept
from ingest.uploads import UploadRefused


class ProviderList(generics.ListAPIView):
    serializer_class = serializers.ProviderSerializer
    queryset = Provider.objects.all()


class AccountList(generics.ListAPIView):
    serializer_class = serializers.AccountSerializer
    permission_classes = [access.SeesSources]
    queryset = Account.objects.select_related("provider").order_by("name")


class AccountDetail(generics.RetrieveAPIView):
    serializer_class = serializers.AccountSerializer
    permission_classes = [access.SeesSources]
    queryset = Account.objects.select_related("provider")

    @extend_schema(
        request=serializers.FocusServicesSerializer,
        responses=serializers.AccountSerializer,
        summary="Choose a FOCUS file account's services (admins)",
    )
    def patch(self, request, pk):
        """The FOCUS services a file account imports besides, or never, its provider's LLM inference."""
        account = self.get_object()
        body = serializers.FocusServicesSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        values = {"include": account.focus_services_include, "exclude": account.focus_services_exclude}
        values |= {key.removeprefix("focus_services_"): value for key, value in body.validated_data.items()}
        try:
            account = account_focus_services_set(account=account, by=request.user, **values)
        except AccountInvalid as invalid:
            raise ValidationError({"detail": str(invalid)}) from None
        return Response(serializers.AccountSerializer(account).data)


class AccountRunList(generics.ListAPIView):
    serializer_class = serializers.IngestRunSerializer
    permission_classes = [access.SeesSources]

    def get_queryset(self):
        account = get_object_or_404(Account, pk=self.kwargs["pk"])
        return account.runs.all()


class AccountImportCreate(APIView):
    """Upload an export file for an account; a worker imports it (watch the returned run)."""

    permission_classes = [access.SeesSources]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}
        },
        responses={202: serializers.IngestRunSerializer},
        summary="Upload a usage export for import",
    )
    def post(self, request, pk):
        account = get_object_or_404(Account, pk=pk)
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": "attach the export as multipart field `file`"})
        if not account.reads_files:
            raise ValidationError({"detail": f"{account.name} is pulled from its API; files go to file accounts"})
        try:
            with transaction.atomic():
                run = usage_upload_accept(account=account, upload=upload, file_name=upload.name)
        except UploadRefused as refused:
            raise ValidationError({"file": str(refused)}) from None
        return Response(serializers.IngestRunSerializer(run).data, status=202)


class AccountSyncCreate(APIView):
    """Queue a pull of an API account: its scheduled window, or [start, end) in UTC days."""

    permission_classes = [access.SeesSources]

    @extend_schema(
        request=serializers.SyncRequestSerializer,
        responses={202: serializers.IngestRunSerializer(many=True)},
        summary="Sync now",
    )
    def post(self, request, pk):
        account = get_object_or_404(Account, pk=pk)
        body = serializers.SyncRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            runs = sync_now(account=account, **body.validated_data)  # inline tasks: the runs come back finished
        except QueueUnavailable as exc:
            return services_down_response(str(exc))
        except IngestError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        return Response(serializers.IngestRunSerializer(runs, many=True).data, status=202)


class RunDetail(generics.RetrieveAPIView):
    serializer_class = serializers.IngestRunSerializer
    permission_classes = [access.SeesSources]
    queryset = IngestRun.objects.all()
