"""Allow-list operations: our extension of the spec's Financial instruments operations
(docs/instruments.md, "Allow-list"), one declaration each (tenancy/endpoints.py says what a
row holds). The view set and routes are made from ``TABLE`` (instruments/allowlist/urls.py)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from tenancy.endpoints import Endpoint
from transactions.responses import attach_wait_all, mutation_response, transaction_result

from ..lookup import resolve_instrument
from . import selectors, services
from .serializers import AllowListOutput, ChangeAllowListInput, ChangeAllowListOutput, FetchAllowListInput, InitializeAllowListInput, InitializeAllowListOutput

TAG = ("Financial instruments",)
FIELD = "itemData.financialInstrument"
_HOOK = (
    " Only for instruments whose transferHookProgram is the project's allow-list program (400 EXTENSION_MISSING without a "
    "transfer hook, NOT_ALLOW_LIST_HOOK with another program; INSTRUMENT_CLOSED, INSTRUMENT_NOT_ONCHAIN). Our extension of the spec."
)
_SIGNED = (
    " Signed by the allow-list's authority: on platform when the service holds its key for the organization, else the "
    "transaction is PARTIALLY_SIGNED for Sign Transaction. One operation on an instrument at a time (409 OPERATION_IN_PROGRESS)."
)
_V = "AllowListViewSet"


def _instrument(door, data: dict, writable: bool = True):
    return resolve_instrument(door.tenant, door.cluster, data["financialInstrument"], field=FIELD, writable=writable)


def _initialize(door, ctx, body):
    data = body["itemData"]
    result = services.allow_list_initialize(ctx, instrument=_instrument(door, data), data=data)
    identifiers = services.allow_list_identifiers(result.instrument, result.allow_list)
    return mutation_response(door.request, "initializedAllowList", identifiers, result.transactions[0], status=status.HTTP_201_CREATED)


def _change(action: str):
    def run(door, ctx, body):
        data = body["itemData"]
        result = services.allow_list_change(ctx, instrument=_instrument(door, data), action=action, data=data)
        response = Response({"allowList": services.allow_list_identifiers(result.instrument, result.allow_list),
                             "svmTransactions": [transaction_result(tx) for tx in result.transactions]})
        attach_wait_all(response, door.request, result.transactions)
        return response
    return run


def _details(door, ctx, body):
    instrument = _instrument(door, body["itemData"], writable=False)
    return Response(selectors.allow_list_page(tenant=door.tenant, instrument=instrument, page=body.get("itemQuery"), field=FIELD))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "initialize", "financial-instruments/allow-list", "post", "instrument-allow-list", "initializeAllowList", "Initialize Allow-List",
             "Creates the hook's validation account and the instrument's empty allow-list (InitializeAllowList; Create Financial "
             "Instrument does it already when it names the allow-list program). The mint authority signs; the rent of both accounts "
             "comes from svmTransactionConfig.feePayer (400 FUNDING_ACCOUNT_REQUIRED without one, 403 DEBIT_LIMIT_EXCEEDED over its "
             "limits). 409 ALLOW_LIST_EXISTS when the list exists; 400 NO_AUTHORITY without a mint authority, AUTHORITY_MISMATCH "
             "when mintAuthority is not it, OUT_OF_RANGE for a capacity outside 1–256." + _HOOK,
             InitializeAllowListInput, _initialize, {201: InitializeAllowListOutput}, wait=True, tags=TAG),
    Endpoint(_V, "add", "financial-instruments/allow-list/add", "patch", "instrument-allow-list-add", "addAllowListOwners", "Add Allow-List Owners",
             "Allows transfers to token accounts owned by each of owners (1–256): one AddOwner per owner, packed into as few "
             "transactions as fit. Checked against the list on chain first: 400 ALLOW_LIST_NOT_INITIALIZED, OWNER_ALREADY_ALLOWED "
             "and DUPLICATE_OWNER (naming owners[i]), INVALID_OWNER (the zero address), ALLOW_LIST_FULL (over the capacity), "
             "AUTHORITY_MISMATCH (authority is not the list's), ACCOUNT_INACTIVE." + _SIGNED + _HOOK,
             ChangeAllowListInput, _change(services.ADD), {200: ChangeAllowListOutput}, wait=True, tags=TAG),
    Endpoint(_V, "remove", "financial-instruments/allow-list/remove", "patch", "instrument-allow-list-remove", "removeAllowListOwners", "Remove Allow-List Owners",
             "Stops allowing each of owners (1–256): one RemoveOwner per owner, packed into as few transactions as fit. Positions "
             "they hold stay, but receive nothing more. 400 ALLOW_LIST_NOT_INITIALIZED, OWNER_NOT_LISTED and DUPLICATE_OWNER "
             "(naming owners[i]), AUTHORITY_MISMATCH." + _SIGNED + _HOOK,
             ChangeAllowListInput, _change(services.REMOVE), {200: ChangeAllowListOutput}, wait=True, tags=TAG),
    Endpoint(_V, "details", "financial-instruments/allow-list/single", "post", "instrument-allow-list-details", "fetchAllowList", "Fetch Allow-List",
             "Creates no transaction. The allow-list as the chain has it now, decoded: authority, capacity, count, and a page of "
             "owners in list order (itemQuery.limit, default 100, at most 256; itemQuery.skip). initialized is false (and the page "
             "empty) before Initialize Allow-List." + _HOOK,
             FetchAllowListInput, _details, {200: AllowListOutput}, mutation=False, tags=TAG),
)
