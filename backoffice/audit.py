"""The staff audit: snapshots of objects and the one function that records an entry
(docs/admin.md, "Audit").

The address is the client's (ledger_project.client_address: behind a trusted proxy, the
client it names). Values are stored as JSON (DjangoJSONEncoder: datetimes, decimals and
UUIDs as strings).
Secrets are never copied: binary fields and fields named like secrets are replaced by a
short digest, so a change still shows without its value.
"""

from __future__ import annotations

import hashlib
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from ledger_project.client_address import client_address

from .models import AuditKind, StaffAuditEntry

#: objects snapshotted per action (an action over "all 200,000" records its count and the
#: first ids only)
SNAPSHOT_LIMIT = 100
_SECRET_NAMES = ("password", "secret", "ciphertext", "wrapped_dek", "key_nonce", "wrap_nonce", "response_bytes")


def _secret(field: models.Field) -> bool:
    return isinstance(field, models.BinaryField) or any(part in field.name for part in _SECRET_NAMES)


def _redacted(value) -> str | None:
    if value in (None, "", b""):
        return value if value is None else ""
    raw = bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else repr(value).encode()
    return f"<redacted {hashlib.sha256(raw).hexdigest()[:8]}>"


def _json(value):
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder, default=str))


def snapshot(obj: models.Model) -> dict:
    """The object's stored fields (foreign keys as their id) and its many-to-many ids."""
    data = {}
    for field in obj._meta.concrete_fields:
        value = field.value_from_object(obj)
        data[field.attname] = _redacted(value) if _secret(field) else _json(value)
    if obj.pk is not None:
        for field in obj._meta.many_to_many:
            data[field.name] = sorted(str(pk) for pk in getattr(obj, field.name).values_list("pk", flat=True))
    return data


def snapshots(model, pks) -> dict[str, dict]:
    """Fresh snapshots of ``model``'s rows ``pks`` (at most SNAPSHOT_LIMIT), by str(pk)."""
    pks = list(pks)[:SNAPSHOT_LIMIT]
    return {str(obj.pk): snapshot(obj) for obj in model._base_manager.filter(pk__in=pks)}


def diff(before: dict, after: dict) -> tuple[dict, dict]:
    """Only the fields that changed, before and after."""
    keys = [k for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys if k in before}, {k: after.get(k) for k in keys if k in after}


def diff_many(before: dict[str, dict], after: dict[str, dict]) -> tuple[dict, dict]:
    out_before, out_after = {}, {}
    for pk in dict.fromkeys([*before, *after]):
        b, a = diff(before.get(pk, {}), after.get(pk, {}))
        if b or a:
            out_before[pk], out_after[pk] = b, a
    return out_before, out_after


def audit_record(*, request=None, user=None, kind: str, action: str = "", description: str = "", model=None, object_ids=(), object_count: int | None = None,
                 object_repr: str = "", before=None, after=None, outcome=(), actor_name: str | None = None) -> StaffAuditEntry:
    """Append one entry. ``user`` defaults to ``request.user``; ``actor_name`` names a
    user who is not signed in (a failed sign-in)."""
    user = user if user is not None else getattr(request, "user", None)
    signed_in = user is not None and getattr(user, "is_authenticated", False)
    label = model._meta.label_lower if model is not None else ""
    ids = [str(pk) for pk in object_ids]
    return StaffAuditEntry.objects.create(
        actor_id=user.pk if signed_in else None,
        actor=(user.get_username() if signed_in else (actor_name or ""))[:150],
        ip=client_address(request), kind=kind, action=action[:100], description=str(description)[:300], model=label,
        object_ids=ids[:SNAPSHOT_LIMIT], object_count=len(ids) if object_count is None else object_count, object_repr=str(object_repr)[:300],
        before=before, after=after, outcome=[str(line)[:1000] for line in outcome],
        request_id=(getattr(request, "request_id", "") or "")[:64],
    )


__all__ = ["AuditKind", "SNAPSHOT_LIMIT", "audit_record", "diff", "diff_many", "snapshot", "snapshots"]
