"""The quick path of lookup validation gives exactly what the serializer gives, and
leaves everything else to it."""

import uuid

import pytest
from solders.keypair import Keypair

from accounts.serializers import LookupInput


def _full(data):
    serializer = LookupInput(data=data)
    return serializer.validated_data if serializer.is_valid() else None


ADDRESS = str(Keypair().pubkey())


@pytest.mark.parametrize("data", [
    {"itemData": {"onchainId": ADDRESS}},
    {"itemData": {"offchainId": str(uuid.uuid4())}},
])
def test_quick_equals_the_serializer(data):
    assert LookupInput.quick(data) == _full(data) is not None


@pytest.mark.parametrize("data", [
    {"itemData": {"onchainId": "not-an-address"}},
    {"itemData": {"onchainId": ADDRESS[:-1] + "0"}},
    {"itemData": {"offchainId": "1234"}},
    {"itemData": {"offchainId": str(uuid.uuid4()).replace("-", "")}},
    {"itemData": {"onchainId": f" {ADDRESS} "}},
    {"itemData": {"onchainId": 5}},
    {"itemData": {"onchainId": ADDRESS, "offchainId": str(uuid.uuid4())}},
    {"itemData": {"alId": "x"}},
    {"itemData": {"onchainId": ADDRESS}, "tenancyConfig": {"overrideOrganizationExternalId": "X"}},
    {"itemData": None},
    [],
])
def test_anything_else_takes_the_full_path(data):
    assert LookupInput.quick(data) is None
