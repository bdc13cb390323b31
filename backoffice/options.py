"""What every ModelAdmin of the back office does, whoever registered it (the site mixes
``StaffAdminMixin`` into each; backoffice/site.py). docs/admin.md explains each rule.

- **Audit**: additions, changes and deletions (one object or a selection) and every
  action are recorded with who, when and the objects' fields before and after.
- **Actions**: each runs after a confirmation page (its own form when it has one), and an
  action that states no permission needs the model's change permission — a viewer runs
  none.
- **Chain truth read-only**: addresses, signatures and balances as the chain has them are
  read-only on every form, whatever the user's permissions.
- **Lists at scale**: no full count (``show_full_result_count`` off, an estimating
  paginator); an identifier typed in the search box (an address, a signature, a UUID) is
  looked up by equality on the identifier fields (indexed) instead of a substring scan of
  every search field, and free text is read once (SEARCH_LIMIT matches); filters by every
  value of a field read their values from a cache; a date hierarchy on the record's time
  when the admin names none; creation-time ordering without an index becomes pk order.
"""

from __future__ import annotations

import functools
import re
import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.admin import AllValuesFieldListFilter, helpers
from django.contrib.admin.utils import get_fields_from_path, quote
from django.core.cache import cache
from django.db import models
from django.db.models import Q
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from .audit import AuditKind, SNAPSHOT_LIMIT, audit_record, diff, diff_many, snapshot, snapshots
from .paginator import EstimatedCountPaginator

#: POSTed by the confirmation page's button
CONFIRM_FIELD = "_staff_confirmed"

#: fields that are the chain's word, never typed by staff (plus every *_address field)
CHAIN_TRUTH = frozenset({
    "address", "onchain_id", "signature", "signatures", "slot", "synced_slot", "confirmations_count", "lamports_balance", "token_balance",
    "token_decimals", "supply_onchain", "onchain_metadata", "public_key", "blockhash", "last_valid_block_height", "nonce_account",
    "fee_payer", "required_signers", "delegated_amount", "data_length", "extensions",
})

_BASE58 = re.compile(r"^[1-9A-HJ-NP-Za-km-z]{32,88}$")
_SIGNATURE_FIELDS = frozenset({"onchain_id", "signature"})
_ADDRESS_FIELDS = frozenset({"address", "public_key", "fee_payer", "nonce_account", "authority", "mint"})
_UUID_FIELDS = frozenset({"offchain_id", "request_id", "event_id"})
#: matches read by a search (an identifier has a handful; free text is cut here)
SEARCH_LIMIT = 1000


def _is_address_field(name: str) -> bool:
    return name in _ADDRESS_FIELDS or name.endswith("_address")


def _is_identifier_path(path: str) -> bool:
    name = path.rsplit("__", 1)[-1]
    return name in _SIGNATURE_FIELDS or name in _UUID_FIELDS or _is_address_field(name)


_DATE_FIELDS = ("txn_timestamp", "created_at", "at", "date_done")


def is_chain_truth(name: str) -> bool:
    return name in CHAIN_TRUTH or name.endswith("_address") or name.startswith("onchain_")


def _is_uuid(term: str) -> bool:
    try:
        uuid.UUID(term)
    except ValueError:
        return False
    return True


class CachedAllValuesFieldListFilter(AllValuesFieldListFilter):
    """Django's filter by every value of a field, with the values cached for
    LEDGER_ADMIN_FILTER_CHOICES_SECONDS: Django reads them with a DISTINCT over the whole
    table on every page view (a full scan at 200,000 rows)."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        key = f"backoffice:filter-values:{model._meta.label_lower}:{field_path}"
        values = cache.get(key)
        if values is None:
            values = list(self.lookup_choices[:200])
            cache.set(key, values, settings.LEDGER_ADMIN_FILTER_CHOICES_SECONDS)
        self.lookup_choices = values


def _all_values_filter(model, path: str) -> bool:
    """Whether Django would filter ``path`` with AllValuesFieldListFilter."""
    try:
        field = get_fields_from_path(model, path)[-1]
    except Exception:  # noqa: BLE001 - not a field path: left to Django's checks
        return False
    return not (field.is_relation or field.choices or isinstance(field, (models.BooleanField, models.DateField)))


class StaffAdminMixin:
    show_full_result_count = False
    paginator = EstimatedCountPaginator

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.date_hierarchy:
            names = {f.name for f in self.model._meta.concrete_fields if f.get_internal_type() == "DateTimeField"}
            self.date_hierarchy = next((name for name in _DATE_FIELDS if name in names), None)

    # --- chain truth -----------------------------------------------------------------
    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        readonly += [f.name for f in self.model._meta.concrete_fields if is_chain_truth(f.name) and f.name not in readonly]
        return readonly

    # --- filters ---------------------------------------------------------------------
    def get_list_filter(self, request):
        return [(spec, CachedAllValuesFieldListFilter) if isinstance(spec, str) and _all_values_filter(self.model, spec) else spec
                for spec in super().get_list_filter(request)]

    # --- ordering --------------------------------------------------------------------
    def get_ordering(self, request):
        """A list ordered (by the model) on its creation time, which has no index of its
        own, is ordered by primary key instead: the same order (both are set at insert),
        read from the primary key's index instead of sorting the table for every page."""
        ordering = super().get_ordering(request)
        if ordering:
            return ordering
        model_ordering = list(self.model._meta.ordering or ())
        if len(model_ordering) == 1 and isinstance(model_ordering[0], str):
            name = model_ordering[0].lstrip("-")
            field = next((f for f in self.model._meta.concrete_fields if f.name == name), None)
            indexed = field is not None and (field.db_index or field.unique or any(i.fields and i.fields[0].lstrip("-") == name for i in self.model._meta.indexes))
            if field is not None and getattr(field, "auto_now_add", False) and not indexed:
                return ("-pk",) if model_ordering[0].startswith("-") else ("pk",)
        return ordering

    # --- search ----------------------------------------------------------------------
    def _search_paths(self, request) -> list[tuple[str, str]]:
        return [(spec, spec.lstrip("^=@")) for spec in self.get_search_fields(request)]

    def _identifier_paths(self, request, term: str) -> list[str]:
        """Search fields an identifier-looking ``term`` is compared to by equality: a
        signature (64 bytes, 86-88 base58 characters) to signature fields, an address to
        address fields, a UUID to UUID fields."""
        paths = []
        signature = bool(_BASE58.match(term)) and len(term) >= 80
        address = bool(_BASE58.match(term)) and not signature
        for _, path in self._search_paths(request):
            name = path.rsplit("__", 1)[-1]
            if (signature and name in _SIGNATURE_FIELDS) or (address and _is_address_field(name)) or (name in _UUID_FIELDS and _is_uuid(term)):
                paths.append(path)
        return paths

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return super().get_search_results(request, queryset, search_term)
        paths = self._identifier_paths(request, term)
        if paths:
            match = Q()
            for path in paths:
                match |= Q(**{path: term})
            found = []
            if "cluster" in {f.name for f in self.model._meta.concrete_fields}:
                # Indexes on identifiers lead with, or include, the cluster: name the
                # configured clusters so they serve the lookup; only if nothing is found
                # there is every row looked at.
                found = list(queryset.filter(match, cluster__in=list(settings.LEDGER_CLUSTERS)).values_list("pk", flat=True)[:SEARCH_LIMIT])
            if not found:
                found = list(queryset.filter(match).values_list("pk", flat=True)[:SEARCH_LIMIT])
            return queryset.filter(pk__in=found), False
        # Free text: Django's search over the fields that are not identifiers (those are
        # matched whole above), read once for the first SEARCH_LIMIT matches, so the count
        # and the page do not each scan the table.
        free = [spec for spec, path in self._search_paths(request) if not _is_identifier_path(path)]
        if not free:
            return queryset.none(), False
        saved = self.search_fields
        try:
            self.search_fields = free
            matched, duplicates = super().get_search_results(request, queryset, search_term)
        finally:
            self.search_fields = saved
        found = list(matched.order_by("-pk").values_list("pk", flat=True).distinct()[:SEARCH_LIMIT])
        return queryset.filter(pk__in=found), False

    # --- actions: permission, confirmation, audit ------------------------------------
    def get_actions(self, request):
        actions = super().get_actions(request)
        may_change = None
        out = {}
        for name, (func, action_name, description) in actions.items():
            if name == "delete_selected":  # its own confirmation; delete_queryset audits it
                out[name] = (func, action_name, description)
                continue
            if not getattr(func, "allowed_permissions", None):
                if may_change is None:
                    may_change = self.has_change_permission(request)
                if not may_change:
                    continue
            out[name] = (_confirmed_and_audited(func, action_name, str(description)), action_name, description)
        return out

    # --- audit of add / change / delete ------------------------------------------------
    def save_model(self, request, obj, form, change):
        if change and obj.pk is not None:
            stored = type(obj)._base_manager.filter(pk=obj.pk).first()
            if stored is not None:
                _before_store(request)[(type(obj)._meta.label_lower, str(obj.pk))] = snapshot(stored)
        super().save_model(request, obj, form, change)

    def log_addition(self, request, obj, message):
        entry = super().log_addition(request, obj, message)
        stored = type(obj)._base_manager.filter(pk=obj.pk).first() or obj  # as a service stored it
        audit_record(request=request, kind=AuditKind.ADD, action="add", model=type(obj), object_ids=[obj.pk], object_repr=str(stored), after={str(obj.pk): snapshot(stored)})
        return entry

    def log_change(self, request, obj, message):
        entry = super().log_change(request, obj, message)
        before = _before_store(request).pop((type(obj)._meta.label_lower, str(obj.pk)), None)
        if before is None:  # changed outside save_model (e.g. a password change form)
            audit_record(request=request, kind=AuditKind.CHANGE, action="change", model=type(obj), object_ids=[obj.pk], object_repr=str(obj),
                         outcome=[entry.get_change_message() if entry is not None else str(message)])
        else:
            fresh = type(obj)._base_manager.get(pk=obj.pk)
            changed_before, changed_after = diff(before, snapshot(fresh))
            audit_record(request=request, kind=AuditKind.CHANGE, action="change", model=type(obj), object_ids=[obj.pk], object_repr=str(obj),
                         before={str(obj.pk): changed_before}, after={str(obj.pk): changed_after})
        return entry

    def delete_model(self, request, obj):
        pk, before, label = obj.pk, snapshot(obj), str(obj)
        super().delete_model(request, obj)
        audit_record(request=request, kind=AuditKind.DELETE, action="delete", model=type(obj), object_ids=[pk], object_repr=label, before={str(pk): before})

    def delete_queryset(self, request, queryset):
        pks = list(queryset.values_list("pk", flat=True))
        before = snapshots(self.model, pks)
        super().delete_queryset(request, queryset)
        audit_record(request=request, kind=AuditKind.DELETE, action="delete_selected", model=self.model, object_ids=pks, object_count=len(pks), before=before)


def _before_store(request) -> dict:
    store = getattr(request, "_backoffice_before", None)
    if store is None:
        store = request._backoffice_before = {}
    return store


def _selection(request, queryset) -> tuple[list, int]:
    if request.POST.get("select_across", "0") == "1":
        pks = list(queryset.values_list("pk", flat=True)[:SNAPSHOT_LIMIT])
        return pks, EstimatedCountPaginator(queryset.order_by("pk"), 1).count
    pks = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
    return pks, len(pks)


def _object_link(modeladmin, obj) -> str | None:
    opts = obj._meta
    try:
        return reverse(f"{modeladmin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)])
    except NoReverseMatch:
        return None


def _confirmation_page(modeladmin, request, queryset, func, action_name: str, description: str, form, count: int):
    opts = modeladmin.model._meta
    shown = list(queryset[:20])
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Confirm: {description}",
        "opts": opts,
        "app_label": opts.app_label,
        "action_name": action_name,
        "description": description,
        "note": getattr(func, "confirm_note", ""),
        "form": form,
        "objects": [(obj, _object_link(modeladmin, obj)) for obj in shown],
        "count": count,
        "more": max(0, count - len(shown)),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "confirm_field": CONFIRM_FIELD,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "back_url": request.get_full_path(),
    }
    return TemplateResponse(request, "admin/backoffice/confirm_action.html", context)


def _confirmed_and_audited(func, action_name: str, description: str):
    """The action behind a confirmation page, recorded in the audit once it ran."""

    @functools.wraps(func)
    def run(modeladmin, request, queryset):
        form_class = getattr(func, "confirm_form", None)
        form = form_class(request.POST if CONFIRM_FIELD in request.POST else None) if form_class else None
        pks, count = _selection(request, queryset)
        if CONFIRM_FIELD not in request.POST or (form is not None and not form.is_valid()):
            return _confirmation_page(modeladmin, request, queryset, func, action_name, description, form, count)
        model = modeladmin.model
        before = snapshots(model, pks)
        storage = messages.get_messages(request)
        told_from = len(getattr(storage, "_queued_messages", []))
        kwargs = {"options": form.cleaned_data} if form is not None else {}
        try:
            result = func(modeladmin, request, queryset, **kwargs)
        except Exception as exc:
            audit_record(request=request, kind=AuditKind.ACTION, action=action_name, description=description, model=model, object_ids=pks, object_count=count,
                         before=before, outcome=[f"error: {type(exc).__name__}: {exc}"])
            raise
        changed_before, changed_after = diff_many(before, snapshots(model, pks))
        told = [str(m.message) for m in getattr(storage, "_queued_messages", [])[told_from:]]
        audit_record(request=request, kind=AuditKind.ACTION, action=action_name, description=description, model=model, object_ids=pks, object_count=count,
                     before=changed_before, after=changed_after, outcome=told,
                     object_repr=", ".join(str(o) for o in model._base_manager.filter(pk__in=pks[:3])))
        return result

    return run
