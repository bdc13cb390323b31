"""Back-office for organizations and API keys.

A key created here shows its secret once, in the confirmation message; only the hash is
stored. The admin is a client of tenancy.services: it never writes key fields itself.
Revoking is an action (permission ``backoffice.revoke_api_key``, the security officer's)
through ``services.api_key_deactivate``, as final as in the API: the form cannot set a
key active again.
"""

from django import forms
from django.contrib import admin, messages

from ledger_project.staff import staff_action

from . import services
from .models import ApiKey, IdempotencyRecord, TenantOrganization
from .roles import Role


@admin.register(TenantOrganization)
class TenantOrganizationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "name", "is_active", "created_at")
    list_filter = ("is_active",)
    search_fields = ("external_id", "name")
    readonly_fields = ("offchain_id", "created_at", "is_active")
    actions = ["deactivate", "activate"]

    @admin.action(description="Deactivate: their API keys stop working")
    def deactivate(self, request, queryset):
        for tenant in queryset:
            services.tenant_set_active(tenant=tenant, active=False)

    @admin.action(description="Activate")
    def activate(self, request, queryset):
        for tenant in queryset:
            services.tenant_set_active(tenant=tenant, active=True)


class ApiKeyForm(forms.ModelForm):
    roles = forms.MultipleChoiceField(choices=Role.choices, required=False, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ApiKey
        fields = ("organization", "name", "roles", "rate_limit_per_minute")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ("key_id", "organization", "name", "roles", "is_active", "rate_limit_per_minute", "created_at", "last_used_at")
    list_filter = ("is_active", "organization")
    search_fields = ("key_id", "name", "organization__external_id")
    list_select_related = ("organization",)
    readonly_fields = ("key_id", "is_active", "created_at", "last_used_at")
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        # The organization of an existing key never changes (its secret belongs to it).
        return (*super().get_readonly_fields(request, obj), *(("organization",) if obj is not None else ()))

    def save_model(self, request, obj, form, change):
        if change:
            obj.roles = services.roles_validate(list(form.cleaned_data.get("roles") or []))
            super().save_model(request, obj, form, change)
            return
        issued = services.api_key_create(
            organization=form.cleaned_data["organization"],
            roles=list(form.cleaned_data.get("roles") or []),
            name=form.cleaned_data.get("name") or "",
            rate_limit_per_minute=form.cleaned_data.get("rate_limit_per_minute"),
        )
        obj.pk = issued.api_key.pk
        obj.key_id = issued.api_key.key_id
        messages.warning(request, f"API key {issued.api_key.key_id} created. Its secret is shown only now — copy it: {issued.secret}")

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.revoke_api_key")

    @staff_action(description="Revoke API keys", permissions=["revoke"],
                  confirm_note="The keys stop authenticating at once in this process and within LEDGER_API_KEY_CACHE_SECONDS everywhere (docs/auth.md). Revoking cannot be undone.")
    def revoke(self, request, queryset):
        done = 0
        for api_key in queryset.filter(is_active=True):
            services.api_key_deactivate(api_key=api_key)
            done += 1
        self.message_user(request, f"Revoked {done} API key(s).", messages.SUCCESS)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ("request_id", "api_key", "method", "path", "status_code", "created_at")
    list_filter = ("method", "status_code")
    search_fields = ("request_id", "path", "api_key__key_id")
    list_select_related = ("api_key",)

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
