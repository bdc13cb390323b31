"""A URLconf for tests of the shared API machinery: the real API plus one probe endpoint.

The probe is a mutating operation (it creates an organization) so that idempotency,
the envelope and error handling can be tested before every area has its own endpoints.
It exists only in tests.
"""

from django.urls import path
from rest_framework import serializers, status
from rest_framework.response import Response

from ledger_project.api.envelope import EnvelopeSerializer, StrictCharField, StrictIntegerField, StrictSerializer, validated
from ledger_project.api.errors import ConflictError
from tenancy.idempotency import idempotent, write_phase
from ledger_project.api.renderers import display_amount
from tenancy.viewsets import TenantScopedViewSet
from ledger_project.urls import urlpatterns as real_urlpatterns
from tenancy.models import TenantOrganization


class ProbeItem(StrictSerializer):
    externalId = StrictCharField(max_length=64)
    count = StrictIntegerField(min_value=0, max_value=10, required=False)
    kind = serializers.ChoiceField(choices=["A", "B"], required=False)
    ref = serializers.UUIDField(required=False)
    tags = serializers.ListField(child=StrictIntegerField(), required=False)


class ProbeInput(EnvelopeSerializer):
    itemData = ProbeItem()


class ProbeViewSet(TenantScopedViewSet):
    @idempotent(phased=False)
    def create(self, request):
        external_id = validated(ProbeInput, request)["itemData"]["externalId"]
        if TenantOrganization.objects.filter(external_id=external_id).exists():
            raise ConflictError("exists", field="itemData.externalId")
        org = TenantOrganization.objects.create(external_id=external_id, name="probe")
        if external_id.startswith("CRASH"):
            raise RuntimeError("boom after write")
        return Response({"created": {"offchainId": str(org.offchain_id)}, "actingFor": self.tenant.external_id}, status=status.HTTP_201_CREATED)


def probe_network(external_id: str) -> None:
    """Stands for the network phase of a phased mutation (tests patch it to observe it)."""


ABORTED: list[str] = []
DEADLOCKS: dict[str, int] = {}  # externalId → deadlocks still to lose


def _lose_a_deadlock(external_id: str) -> None:
    """What Django raises when PostgreSQL picks this transaction as a deadlock's victim."""
    from django.db import OperationalError
    from psycopg import errors

    if DEADLOCKS.get(external_id, 0) > 0:
        DEADLOCKS[external_id] -= 1
        raise OperationalError("deadlock detected") from errors.DeadlockDetected("deadlock detected")


class PhasedProbeViewSet(TenantScopedViewSet):
    """A mutation in the three phases: read, network (no transaction), write phase."""

    @idempotent
    def create(self, request):
        external_id = validated(ProbeInput, request)["itemData"]["externalId"]
        probe_network(external_id)
        with write_phase(on_abort=lambda: ABORTED.append(external_id)):
            org = TenantOrganization.objects.create(external_id=external_id, name="phased probe")
            _lose_a_deadlock(external_id)
            if external_id.startswith("CRASH"):
                raise RuntimeError("boom in the write phase")
            if external_id.startswith("REFUSE"):
                raise ConflictError("refused after a write", field="itemData.externalId")
        # Keys deliberately not in sorted order: a replay must keep them as sent. The amount
        # is a Decimal (u64 max at 9 decimals) that only LedgerJSONRenderer writes exactly.
        return Response(
            {"zeta": 1, "created": {"offchainId": str(org.offchain_id)}, "alpha": [3, 2, 1], "amount": display_amount(2**64 - 1, 9)},
            status=status.HTTP_201_CREATED,
        )


urlpatterns = [
    path("test/probe", ProbeViewSet.as_view({"post": "create"})),
    path("test/phased-probe", PhasedProbeViewSet.as_view({"post": "create"})),
    *real_urlpatterns,
]
handler404 = "ledger_project.api.errors.handler404"
handler500 = "ledger_project.api.errors.handler500"
