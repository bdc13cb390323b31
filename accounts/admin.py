"""Back-office for accounts: searchable, chain fields read-only, no key material shown.

Only descriptive offchain fields (name, comments, domain) are edited here; references,
limits and debit keys change through the API with its role and conflict checks.
Inactivating is an action through the same service as ``PATCH /api/v1/accounts/inactivate``
(``services.account_inactivate``): closed on the network when it holds lamports (to the
refund destination given on the confirmation page), recorded with the staff user.
"""

from django import forms
from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from ledger_project.staff import ReadOnlyAdmin, staff_action
from tenancy.context import OperationContext

from . import services
from .lookup import resolve_account
from .models import Account, BalanceSnapshot, PrivateKeyDisclosure


class BalanceInline(admin.TabularInline):
    model = BalanceSnapshot
    extra = 0
    can_delete = False
    fields = ("at", "lamports", "transaction")
    readonly_fields = fields
    ordering = ("-at",)
    max_num = 0


class InactivateForm(forms.Form):
    refund_destination = forms.CharField(
        required=False, max_length=44, label="Refund destination address",
        help_text="Where the lamports of a managed account go when it is closed (an account of the same organization, or any address). "
                  "Leave empty for accounts without lamports or whose key the service does not hold.",
    )


#: edited in the admin; everything else is read-only here
EDITABLE = ("name", "comments", "domain")


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("address", "type", "managed", "status", "tenant", "cluster", "code", "al_id", "lamports_balance", "created_at")
    list_filter = ("type", "managed", "status", "cluster", "tenant", "shared_across_tenants")
    search_fields = ("address", "al_id", "code", "account_number", "name", "offchain_id")
    list_select_related = ("tenant",)
    exclude = ("managed_key",)
    inlines = [BalanceInline]
    actions = ["inactivate"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Account._meta.concrete_fields if f.name not in EDITABLE and f.name not in ("id", "managed_key")]

    def has_add_permission(self, request):
        return False  # accounts are created through the API (keys, chain transactions)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_inactivate_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.inactivate_account")

    @staff_action(description="Inactivate accounts", permissions=["inactivate"], confirm_form=InactivateForm,
                  confirm_note="A managed account holding lamports is closed on the network (a transfer of all its lamports to the refund destination, "
                               "signed with its key) and becomes INACTIVE once that is confirmed; any other account becomes INACTIVE at once.")
    def inactivate(self, request, queryset, options=None):
        destination = ((options or {}).get("refund_destination") or "").strip()
        done, refused = 0, []
        for account in queryset.select_related("tenant"):
            try:
                refund = None
                if destination:
                    refund = resolve_account(account.tenant, account.cluster, {"onchainId": destination, "offPlatform": True}, field="itemData.refundDestination", allow_off_platform=True)
                result = services.account_inactivate(OperationContext.system(tenant=account.tenant, cluster=account.cluster), account=account, refund_to=refund,
                                                     requested_by=request.user.get_username())
                done += 1
                if result.transaction is not None:
                    self.message_user(request, f"{account.address}: closing transaction recorded ({result.transaction.status}); INACTIVE once confirmed.", messages.INFO)
            except (LedgerError, ChainError) as exc:
                refused.append(f"{account.address}: {exc.message}")
        self.message_user(request, f"{done} account(s) inactivated or being closed.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)


@admin.register(PrivateKeyDisclosure)
class PrivateKeyDisclosureAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("at", "account", "api_key", "acting_tenant", "request_id")
    list_filter = ("acting_tenant",)
    search_fields = ("account__address", "api_key__key_id", "request_id")
    list_select_related = ("account", "api_key", "acting_tenant")


from . import admin_threshold  # noqa: E402,F401  (threshold keys' back-office)
