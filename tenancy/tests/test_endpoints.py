"""One declaration per operation (tenancy/endpoints.py): the view sets, methods and routes made
from an area's table (positions/endpoints.py) are what the rows say, and a row declared twice
is refused when the table is read, not at the first request."""

from __future__ import annotations

import pytest
from django.urls import resolve

from positions.endpoints import TABLE
from tenancy.endpoints import Endpoint, urlpatterns, viewsets
from tenancy.viewsets import TenantScopedViewSet


def test_every_row_routes_to_its_method_with_its_kind():
    for row in TABLE:
        match = resolve("/api/v1/" + row.path.replace("<str:detail_level>", "compact"))
        view = match.func.cls
        assert issubclass(view, TenantScopedViewSet) and view.__name__ == row.viewset
        assert match.func.actions[row.method] == row.action
        method = getattr(view, row.action)
        assert getattr(method, "idempotent", False) == row.mutation, row.operation_id


def test_a_batch_weighs_its_items_and_other_actions_one():
    from types import SimpleNamespace

    batch = next(row for row in TABLE if row.operation_id == "transferNetworkCurrencyBatch")
    view = resolve("/api/v1/" + batch.path).func.cls()
    view.action = batch.action
    assert view.throttle_weight(SimpleNamespace(data={"itemData": {"items": [{}] * 7}})) == 7
    assert view.throttle_weight(SimpleNamespace(data={"itemData": "not an object"})) == 1
    view.action = "details"
    assert view.throttle_weight(SimpleNamespace(data={"itemData": {"items": [{}] * 7}})) == 1


def _row(**changes) -> Endpoint:
    base = dict(viewset="V", action="a", path="p", method="post", url_name="p", operation_id="op", summary="S", description="D",
                input=None, run=lambda door, ctx, body: None)
    return Endpoint(**{**base, **changes})


def test_a_row_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        viewsets([_row(), _row(operation_id="other")], module=__name__)
    classes = viewsets([_row(), _row(action="b")], module=__name__)
    with pytest.raises(ValueError, match="POST p is declared twice"):
        urlpatterns([_row(), _row(action="b")], classes)
