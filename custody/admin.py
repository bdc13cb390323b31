"""Back-office for custody: managed keys' public facts (the master key's page is backoffice/custody.py)."""

from django.contrib import admin

from .models import ManagedKey


@admin.register(ManagedKey)
class ManagedKeyAdmin(admin.ModelAdmin):
    """Public facts only: the encrypted material is never a field here."""

    list_display = ("public_key", "location", "master_key_id", "created_at", "rotated_at")
    list_filter = ("location", "master_key_id")
    search_fields = ("public_key",)
    fields = ("public_key", "location", "master_key_id", "created_at", "rotated_at")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
