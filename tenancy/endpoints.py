"""An API operation is one declaration (docs/architecture.md, "An operation is one declaration").

An area lists its operations as ``Endpoint`` rows (``positions/endpoints.py``): the path and
method, the OpenAPI description, the request serializer, what it runs and how it answers.
From that table come the area's view sets (``viewsets``: one method per row, through the
tenant door ``TenantScopedViewSet``, ``@idempotent`` for mutations), its URL routes
(``urlpatterns``) and the OpenAPI operation of each (drf-spectacular reads the
``extend_schema`` the method is given here). A row's ``run`` receives the door (the view:
its ``request``, ``tenant``, ``cluster``), the operation's context and the validated body;
it returns the Response. The context plumbing (``self.operation(Input)``, the body's
``itemData``) is written here once, not in every view method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from django.urls import path as url_path
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from chain.errors import ChainError
from ledger_project.api.commands import spec_path
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError, ValidationFailed
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.chain_errors import is_chain_path
from tenancy.idempotency import idempotent
from tenancy.viewsets import TenantScopedViewSet


@dataclass(frozen=True)
class Endpoint:
    """One operation of the API."""

    #: the view set it belongs to (one per family of operations) and its action there
    viewset: str
    action: str
    #: the route under /api/v1/ (Django path syntax; a converter's value is passed to ``run``)
    path: str
    method: str
    #: the URL name of the route (the first row of a path names it)
    url_name: str
    operation_id: str
    summary: str
    description: str | None
    #: the request serializer (validated before ``run`` unless ``validate`` is False)
    input: type
    #: run(door, context, body, **path values) -> Response
    run: Callable
    #: success status → output serializer (with the error answers of ``api_responses``)
    responses: dict = field(default_factory=dict)
    #: records a transaction or a row: idempotent on x-request-id; 409 among its answers
    mutation: bool = True
    #: offers ?wait= (docs/api.md)
    wait: bool = False
    tags: tuple[str, ...] = ()
    #: the body is validated by ``run`` itself (a path value is checked first)
    validate: bool = True
    #: extend_schema arguments that replace the ones made from the fields above
    schema: dict = field(default_factory=dict)
    #: rate-limit units the request costs (tenancy/throttling.py), default 1
    weight: Callable | None = None
    #: before(door): a check ahead of the body's validation (a role only some operations need)
    before: Callable | None = None

    def schema_arguments(self) -> dict:
        arguments = {
            "operation_id": self.operation_id, "summary": self.summary, "request": self.input,
            "responses": api_responses(self.responses, mutation=self.mutation), "parameters": operation_parameters(wait=self.wait),
            "tags": list(self.tags),
        }
        if self.description is not None:
            arguments["description"] = self.description
        return {**arguments, **self.schema}


def request_fields(exc: Exception, input_serializer: type) -> None:
    """Name the fields of a refusal as the request does (ledger_project/api/commands.py): the
    services below name them by their commands' Python paths; this is the one place they
    are mapped. A chain path (``cluster``, ``config.version``) is tenancy/chain_errors.py's."""
    if isinstance(exc, ValidationFailed):
        for error in exc.errors:
            error["field"] = spec_path(input_serializer, error.get("field"))
        exc.field = exc.errors[0].get("field") if exc.errors else None
    elif isinstance(exc, LedgerError) or (isinstance(exc, ChainError) and not is_chain_path(exc.field)):
        exc.field = spec_path(input_serializer, exc.field)


def _view_method(endpoint: Endpoint) -> Callable:
    def view(self, request, **values):
        if endpoint.before is not None:
            endpoint.before(self)
        if endpoint.validate:
            context, body = self.operation(endpoint.input)
        else:
            context, body = None, None
        try:
            return endpoint.run(self, context, body, **values)
        except (LedgerError, ChainError) as exc:
            request_fields(exc, endpoint.input)
            raise

    view.__name__ = view.__qualname__ = endpoint.action
    view.__doc__ = None  # drf-spectacular would take a docstring for the description
    if endpoint.mutation:
        view = idempotent(view)
    return extend_schema(**endpoint.schema_arguments())(view)


def viewsets(table: Sequence[Endpoint], *, module: str, model=None, docs: dict[str, str] | None = None, members: dict[str, dict] | None = None) -> dict[str, type]:
    """One TenantScopedViewSet per ``viewset`` name of ``table``, with a method per row;
    ``model`` is the model of all of them or, as a dict, of each; ``members`` adds a view
    set's own attributes (its ``scoped_queryset``)."""
    classes: dict[str, dict] = {}
    for endpoint in table:
        own_model = model.get(endpoint.viewset) if isinstance(model, dict) else model
        attrs = classes.setdefault(endpoint.viewset, {"__module__": module, "model": own_model, "__doc__": (docs or {}).get(endpoint.viewset), "_weights": {},
                                                      **(members or {}).get(endpoint.viewset, {})})
        if endpoint.action in attrs:
            raise ValueError(f"{endpoint.viewset}.{endpoint.action} is declared twice")
        attrs[endpoint.action] = _view_method(endpoint)
        if endpoint.weight is not None:
            attrs["_weights"][endpoint.action] = endpoint.weight
    made = {}
    for name, attrs in classes.items():
        if attrs["_weights"]:
            attrs["throttle_weight"] = _throttle_weight
        made[name] = type(name, (TenantScopedViewSet,), attrs)
    return made


def _throttle_weight(self, request) -> int:
    weigh = self._weights.get(self.action)
    return weigh(request) if weigh is not None else 1


def urlpatterns(table: Sequence[Endpoint], classes: dict[str, type]) -> list:
    """The routes of ``table``, in its order: one per path, its methods mapped to actions."""
    routes: dict[tuple[str, str], dict] = {}
    for endpoint in table:
        route = routes.setdefault((endpoint.viewset, endpoint.path), {"name": endpoint.url_name, "actions": {}})
        if endpoint.method in route["actions"]:
            raise ValueError(f"{endpoint.method.upper()} {endpoint.path} is declared twice")
        route["actions"][endpoint.method] = endpoint.action
    return [url_path(path, classes[viewset].as_view(route["actions"]), name=route["name"]) for (viewset, path), route in routes.items()]


LEVELS = ("detailed", "compact", "identifiers")
BULK_DESCRIPTION = "Creates no transaction. detail-level: detailed, compact, identifiers."


def detail_level_checked(detail_level: str) -> str:
    """A bulk fetch's path value; checked before the body: the path names what the page is."""
    if detail_level not in LEVELS:
        raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
    return detail_level


def bulk_schema(page: str, outputs: tuple) -> dict:
    """A bulk fetch's OpenAPI answers (one items schema per detail level) and parameters."""
    return {"responses": bulk_responses(page, *outputs), "parameters": [DETAIL_LEVEL, *operation_parameters()]}


def bulk_fetch(viewset: str, path: str, url_name: str, *, operation_id: str, query, summary: str, input: type, page: str, outputs: tuple,
               tags: tuple[str, ...], items: Callable | None = None, renderers: dict | None = None, run: Callable | None = None,
               description: str = BULK_DESCRIPTION) -> Endpoint:
    """A bulk fetch ("Fetch Positions"): POST ``path``/<detail_level> with an itemQuery,
    answering ``{count, items}`` at the path's detail level. ``items(door, item_query,
    detail_level)`` gives (records, count), each drawn by ``renderers[detail_level]``; or
    ``run(door, body, detail_level)`` answers whole (a page drawn together)."""

    def fetch(door, ctx, body, detail_level: str):
        detail_level_checked(detail_level)
        body = validated(input, door.request)
        if run is not None:
            return run(door, body, detail_level)
        records, count = items(door, body.get("itemQuery"), detail_level)
        render = renderers[detail_level]
        return Response({"count": count, "items": [render(record) for record in records]})

    return Endpoint(viewset, "bulk", f"{path}/<str:detail_level>", "post", url_name, item_query(operation_id, query), summary, description,
                    input, fetch, mutation=False, tags=tags, validate=False, schema=bulk_schema(page, outputs))
