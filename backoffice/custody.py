"""Master-key rotation for the security officer (docs/admin.md, "Roles"; docs/custody.md,
"Rotation"): what each master key still seals, and a button that runs the same service as
``manage.py rotate_master_key`` (``custody.services.master_key_rotate``) after a
confirmation. Retiring an old key stays a command (it edits the key file or the
environment), shown here as the next step."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from .audit import AuditKind, audit_record

PERMISSION = "backoffice.rotate_master_key"


def _status() -> dict:
    from custody.services import current_master_key_id, keyring, master_key_id, sealed_references

    references = sealed_references()
    current = current_master_key_id()
    return {
        "current": current,
        "keys": [{"id": master_key_id(key), "current": master_key_id(key) == current, "sealed": references.get(master_key_id(key), 0)} for key in keyring()],
        "unknown": {kid: n for kid, n in references.items() if kid not in {master_key_id(k) for k in keyring()}},
    }


def master_key_view(request):
    from custody.services import master_key_rotate
    from custody.errors import CustodyError

    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied
    if request.method == "POST" and request.POST.get("_staff_confirmed") == "rotate":
        before = _status()
        try:
            result = master_key_rotate()
        except CustodyError as exc:
            messages.error(request, exc.message)
            audit_record(request=request, kind=AuditKind.ACTION, action="rotate_master_key", description="Rotate the master key", outcome=[f"error: {exc.message}"], before=before)
        else:
            told = (f"Rotated: {result.rewrapped} managed key(s) re-wrapped and {result.resealed} secret(s) re-sealed under master key {result.master_key_id}."
                    + (f" Still sealed under old keys: {result.still_referenced} — rotate again before retiring them." if result.still_referenced else ""))
            messages.success(request, told)
            audit_record(request=request, kind=AuditKind.ACTION, action="rotate_master_key", description="Rotate the master key", outcome=[told], before=before, after=_status())
        return HttpResponseRedirect(reverse("admin:backoffice_master_key"))
    context = {
        **admin.site.each_context(request),
        "title": "Custody master key",
        "status": _status(),
        "confirming": request.method == "POST" and request.POST.get("confirm") == "1",
    }
    return TemplateResponse(request, "admin/backoffice/master_key.html", context)
