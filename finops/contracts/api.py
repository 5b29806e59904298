"""REST API v1, contracts (issue 11): the same service as apply_config; admins and finance read, admins write,
anyone else gets 404 (finops.core.access.SeesContracts)."""

import io

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from finops.contracts import focus_export as contracts_focus
from finops.contracts import serializers as contract_serializers
from finops.contracts import services as contract_service
from finops.contracts.selectors import contract_status, contract_statuses, renewals_ahead
from finops.core import access
from finops.models import Contract
from finops.web.period import today_utc


def _contracts():
    return Contract.objects.select_related("provider").prefetch_related("accounts", "past_terms")


def _contract_payload(statuses):
    return [
        contract_serializers.ContractSerializer(contract_serializers.ContractSerializer.from_status(s)).data
        for s in statuses
    ]


def _contract_write(call, **kwargs):
    try:
        return call(**kwargs)
    except contract_service.ContractInvalid as exc:
        raise ValidationError(exc.errors) from None


def _one_contract(contract):
    return _contract_payload([contract_status(_contracts().get(pk=contract.pk), today=today_utc())])[0]


class ContractList(APIView):
    """Every contract with its figures today (consumed, projected, shortfall, notice deadline …), soonest end first."""

    permission_classes = [access.SeesContracts]

    @extend_schema(
        responses=contract_serializers.ContractSerializer(many=True),
        summary="List contracts",
        description="Admins and finance; anyone else gets 404. Money is a decimal string in the contract's currency.",
    )
    def get(self, request):
        return Response(_contract_payload(contract_statuses(list(_contracts()), today=today_utc())))

    @extend_schema(
        request=contract_serializers.ContractWriteSerializer,
        responses={
            201: contract_serializers.ContractSerializer,
            400: OpenApiResponse(description="Every bad field named: {field: message}."),
        },
        summary="Create a contract (admins)",
    )
    def post(self, request):
        body = contract_serializers.ContractWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        contract = _contract_write(contract_service.contract_create, by=request.user, **body.validated_data)
        return Response(_one_contract(contract), status=201)


class ContractDetail(APIView):
    """One contract and its figures today. PATCH changes the fields given (dates correct the current term;
    nothing is archived); a new term is `POST …/renew`."""

    permission_classes = [access.SeesContracts]

    @extend_schema(responses=contract_serializers.ContractSerializer, summary="A contract and its figures today")
    def get(self, request, pk):
        return Response(_one_contract(get_object_or_404(Contract, pk=pk)))

    @extend_schema(
        request=contract_serializers.ContractWriteSerializer,
        responses={
            200: contract_serializers.ContractSerializer,
            400: OpenApiResponse(description="Every bad field named: {field: message}."),
        },
        summary="Change a contract (admins)",
    )
    def patch(self, request, pk):
        contract = get_object_or_404(Contract, pk=pk)
        body = contract_serializers.ContractWriteSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        contract = _contract_write(
            contract_service.contract_update, contract=contract, by=request.user, **body.validated_data
        )
        return Response(_one_contract(contract))

    @extend_schema(responses={204: None}, summary="Delete a contract and its past terms (admins)")
    def delete(self, request, pk):
        contract_service.contract_delete(contract=get_object_or_404(Contract, pk=pk), by=request.user)
        return Response(status=204)


class ContractRenew(APIView):
    """Renew in place: the current term is archived (see `past_terms`), the new one set."""

    permission_classes = [access.SeesContracts]

    @extend_schema(
        request=contract_serializers.ContractRenewSerializer,
        responses={
            200: contract_serializers.ContractSerializer,
            400: OpenApiResponse(description="Every bad field named; a start before the current end."),
        },
        summary="Renew a contract in place (admins)",
    )
    def post(self, request, pk):
        contract = get_object_or_404(Contract, pk=pk)
        body = contract_serializers.ContractRenewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        contract = _contract_write(
            contract_service.contract_renew, contract=contract, by=request.user, **body.validated_data
        )
        return Response(_one_contract(contract))


class ContractRenewals(APIView):
    """Auto-renewing contracts whose notice deadline falls in [today, today + within_days), soonest first."""

    permission_classes = [access.SeesContracts]

    @extend_schema(
        parameters=[contract_serializers.RenewalsQuerySerializer],
        responses={
            200: contract_serializers.ContractSerializer(many=True),
            400: OpenApiResponse(
                description="within_days is not a whole number from 1 to 3660, or an unknown parameter."
            ),
        },
        summary="Auto-renewals ahead",
    )
    def get(self, request):
        query = contract_serializers.RenewalsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(_contract_payload(renewals_ahead(today=today_utc(), **query.validated_data)))


class ContractFocusCSV(APIView):
    """FOCUS 1.3 Contract Commitment dataset (finops/contracts/focus_export.py): one row per commitment period."""

    permission_classes = [access.SeesContracts]

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR},
        summary="Contract commitments as FOCUS 1.3 CSV",
        operation_id="v1_contracts_focus_csv",
        description="Columns: " + ", ".join(contracts_focus.HEADER) + ". ContractCommitmentQuantity and "
        "ContractCommitmentUnit are empty: every commitment is a Spend commitment.",
    )
    def get(self, request):
        out = io.StringIO()
        contracts_focus.write_focus_csv(_contracts().order_by("id"), out)
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="contract-commitments-focus-1.3.csv"'
        return response
