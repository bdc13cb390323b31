from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer


class AccessTokenInput(serializers.Serializer):
    grant_type = serializers.ChoiceField(choices=["client_credentials"])
    client_id = serializers.CharField(max_length=64)
    client_secret = serializers.CharField(max_length=200)


class AccessTokenOutput(serializers.Serializer):
    access_token = serializers.CharField()
    token_type = serializers.CharField()
    expires_in = serializers.IntegerField()


class WhoAmIInput(EnvelopeSerializer):
    pass


class OrganizationOutput(serializers.Serializer):
    externalId = serializers.CharField(source="external_id")
    name = serializers.CharField()
    offchainId = serializers.UUIDField(source="offchain_id")


class WhoAmIOutput(serializers.Serializer):
    keyId = serializers.CharField()
    name = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    organization = OrganizationOutput()
    actingOrganization = OrganizationOutput()
    rateLimitPerMinute = serializers.IntegerField()
    svmCluster = serializers.CharField()
    clusters = serializers.ListField(child=serializers.CharField())
