"""Accounts an organization recorded at an address the platform holds a key for (its fee
payers, its nonce pool, its program authorities) are inactivated: from now on no tenant may
record one (PLATFORM_ADDRESS_NOT_ALLOWED, docs/custody.md), and an inactive account neither
signs nor receives. The rows stay, so their history remains readable."""

from django.conf import settings
from django.db import migrations


def platform_addresses(apps) -> set[str]:
    fee_payer = apps.get_model("transactions", "PlatformFeePayer")
    nonce = apps.get_model("transactions", "NonceAccount")
    program = apps.get_model("transactions", "ProgramDeployment")
    found = set(fee_payer._base_manager.values_list("managed_key__public_key", flat=True))
    for address, authority in nonce._base_manager.filter(tenant__isnull=True).values_list("address", "authority"):
        found |= {address, authority}
    for authority, key in program._base_manager.values_list("upgrade_authority_key__public_key", "program_key__public_key"):
        found |= {authority, key}
    found |= set(settings.LEDGER_PLATFORM_ADDRESSES)
    found.discard(None)
    return found


def inactivate(apps, schema_editor):
    account = apps.get_model("accounts", "Account")
    addresses = platform_addresses(apps)
    if addresses:
        account._base_manager.filter(address__in=addresses).exclude(status="INACTIVE").update(status="INACTIVE")


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0008_threshold_keys"),
        ("transactions", "0080_admin_search_indexes"),
    ]

    operations = [migrations.RunPython(inactivate, migrations.RunPython.noop)]
