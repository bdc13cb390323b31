"""postTransactionSubmitWebhooks of an instrument: stored with their credentials sealed.

The delivery worker (the webhooks issue) opens them with ``custody.services.secret_open``;
responses never show a credential, only that one is set. The stored credentials are a
sealed store of custody's (registered below), so master-key rotation re-seals them and
retirement counts them (docs/custody.md, Rotation).
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from custody.services import SealedStore, master_key_id, register_sealed_store, secret_key_id, secret_open, secret_reseal, secret_seal
from tenancy.scoping import worker_only

#: (config object, secret field) pairs in a webhook definition.
SECRET_FIELDS = (("apiKeyAuthConfig", "keyValue"), ("oauth2AuthConfig", "clientSecret"), ("oauth2AuthConfig", "password"))


def _purpose(hook: dict, config: str, field: str) -> str:
    return f"webhook:{hook.get('endpointUrl')}:{config}.{field}"


def sealed(hooks: list[dict]) -> list[dict]:
    """Validated webhook definitions → what the record stores. Called in the write phase
    that stores them (``secret_seal`` refuses outside a transaction): sealing reads the
    master key current then, under custody's sealing lock (docs/custody.md)."""
    out = []
    for hook in hooks:
        hook = {k: (dict(v) if isinstance(v, dict) else v) for k, v in hook.items() if v is not None}
        for config, field in SECRET_FIELDS:
            section = hook.get(config)
            if section and section.get(field) is not None:
                section[field] = {"sealed": secret_seal(value=section[field], purpose=_purpose(hook, config, field))}
        out.append(hook)
    return out


def subscriptions_sync(instrument, hooks: list[dict]) -> None:
    """The instrument's webhooks (validated, clear) as subscriptions of the webhook registry
    (webhooks/services.py), through which their events are delivered. In the write
    phase that stores the list, after the instrument row is saved."""
    from webhooks.services import webhook_sync_instrument

    webhook_sync_instrument(tenant=instrument.tenant, cluster=instrument.cluster, instrument_offchain_id=instrument.offchain_id,
                            instrument_address=instrument.address, hooks=hooks)


def opened(hook: dict, config: str, field: str) -> str | None:
    """The clear credential of one stored webhook (for delivery)."""
    value = (hook.get(config) or {}).get(field)
    if not value:
        return None
    return secret_open(sealed=value["sealed"], purpose=_purpose(hook, config, field))


# --- rotation: the sealed store of webhook credentials ----------------------------------


def _sealed_fields(hooks: list[dict]):
    for hook in hooks or []:
        for config, field in SECRET_FIELDS:
            value = (hook.get(config) or {}).get(field)
            if isinstance(value, dict) and "sealed" in value:
                yield hook, config, field, value["sealed"]


@worker_only  # master-key rotation (management command): every tenant
def _with_webhooks():
    from .models import FinancialInstrument

    return FinancialInstrument.unscoped.exclude(post_transaction_submit_webhooks=[])


def _references() -> Counter:
    counts: Counter = Counter()
    for hooks in _with_webhooks().values_list("post_transaction_submit_webhooks", flat=True).iterator():
        counts.update(secret_key_id(sealed) for *_, sealed in _sealed_fields(hooks))
    return counts


@worker_only  # master-key rotation (management command): every tenant
def _reseal(current: bytes) -> int:
    """Re-seal every credential not under ``current``; each instrument row is locked and
    re-read while its list is rewritten, so a concurrent update of the list is not lost."""
    from .models import FinancialInstrument

    current_id, count = master_key_id(current), 0
    stale = [pk for pk, hooks in _with_webhooks().values_list("pk", "post_transaction_submit_webhooks").iterator()
             if any(secret_key_id(sealed) != current_id for *_, sealed in _sealed_fields(hooks))]
    for pk in stale:
        with transaction.atomic():
            hooks = FinancialInstrument.unscoped.select_for_update().filter(pk=pk).values_list("post_transaction_submit_webhooks", flat=True).first()
            changed = 0
            for hook, config, field, sealed in _sealed_fields(hooks):
                if secret_key_id(sealed) != current_id:
                    hook[config][field] = {"sealed": secret_reseal(sealed=sealed, purpose=_purpose(hook, config, field), current=current)}
                    changed += 1
            if changed:
                FinancialInstrument.unscoped.filter(pk=pk).update(post_transaction_submit_webhooks=hooks)
        count += changed
    return count


register_sealed_store(SealedStore("instruments.webhooks", references=_references, reseal=_reseal))
