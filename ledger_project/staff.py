"""``staff_action``: how an area's admin declares a back-office action (docs/admin.md).

Here, below every app, so areas declare their actions without depending on the back
office app that runs them (backoffice/options.py: the confirmation page, the permission
check, the audit)."""

from __future__ import annotations


def staff_action(*, description: str, permissions=(), confirm_form=None, confirm_note: str = ""):
    """``admin.action`` plus what the confirmation page shows: ``confirm_form`` (a Form
    whose cleaned data the action receives as ``options=``) and ``confirm_note`` (what
    happens, e.g. "a network transaction signed by ..."). ``permissions`` as for
    ``admin.action``: "inactivate" needs the ModelAdmin's ``has_inactivate_permission``."""

    def decorate(func):
        func.short_description = description
        if permissions:
            func.allowed_permissions = tuple(permissions)
        func.confirm_form = confirm_form
        func.confirm_note = confirm_note
        return func

    return decorate


class ReadOnlyAdmin:
    """Mix into a ModelAdmin whose records staff read and never add, change or delete here
    (audit trails, readings): ``class XAdmin(ReadOnlyAdmin, admin.ModelAdmin)``."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
