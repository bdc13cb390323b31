"""Back-office for organizations and API keys.

A key created here shows its secret once, in the confirmation message; only the hash is
stored. The admin is a client of tenancy.services: it never writes key fields itself.
"""

from django import forms
from django.contrib import admin, messages

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
        fields = ("organization", "name", "roles", "is_active", "rate_limit_per_minute")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ("key_id", "organization", "name", "roles", "is_active", "rate_limit_per_minute", "created_at", "last_used_at")
    list_filter = ("is_active", "organization")
    search_fields = ("key_id", "name", "organization__external_id")
    list_select_related = ("organization",)
    readonly_fields = ("key_id", "created_at", "last_used_at")
    actions = ["deactivate_keys"]

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

    @admin.action(description="Deactivate selected API keys")
    def deactivate_keys(self, request, queryset):
        for api_key in queryset:
            services.api_key_deactivate(api_key=api_key)
        self.message_user(request, f"Deactivated {queryset.count()} key(s).", messages.SUCCESS)


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
