"""One field list per response (ledger_project/api/shapes.py): every fast renderer of every
area declares the serializer that documents its answer, and while the tests run each answer
it builds is checked against that serializer — so every API test of every area is also a
shape test. This file holds the declarations to the renderers and the check to its word."""

from __future__ import annotations

import importlib
import inspect

import pytest

from ledger_project.api import shapes

#: every module that builds answers without a serializer
RENDER_MODULES = ("accounts.render", "positions.render", "positions.batch_render", "instruments.render", "loans.render",
                  "marketdata.render", "vaults.render", "transactions.details")
#: their public functions that build a part of an answer, or fetch, rather than an answer
PARTS = {"accounts.render.uuid_text", "instruments.render.unrecorded_account", "instruments.render.token_value", "instruments.render.account_responses",
         "loans.render.per_second", "marketdata.render.recorded_feed", "marketdata.render.live_feed", "positions.batch_render.batch_get",
         "transactions.details.operation_records"}


@pytest.mark.parametrize("module_name", RENDER_MODULES)
def test_every_renderer_declares_its_serializer(module_name):
    module = importlib.import_module(module_name)
    public = {f"{module_name}.{name}" for name, fn in vars(module).items()
              if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == module_name}
    undeclared = public - set(shapes.DECLARED) - PARTS
    assert not undeclared, f"declare @renders(serializer) on {sorted(undeclared)} (or list it as a part here)"


def test_every_declared_serializer_exists():
    for renderer, serializer in shapes.DECLARED.items():
        assert shapes.field_tree(serializer)[0] == "object", (renderer, serializer)


def test_the_check_is_on_for_the_whole_test_session():
    assert shapes._checking


def test_a_renderer_that_strays_from_its_serializer_fails():
    serializer = "accounts.serializers.AccountIdentifiersOutput"
    shapes.assert_shape({"onchainId": "x", "offchainId": None}, serializer)
    with pytest.raises(shapes.ShapeMismatch, match="do not document \\['extra'\\]|does not document \\['extra'\\]"):
        shapes.assert_shape({"onchainId": "x", "offchainId": None, "extra": 1}, serializer)
    with pytest.raises(shapes.ShapeMismatch, match="not rendered \\['offchainId'\\]"):
        shapes.assert_shape({"onchainId": "x"}, serializer)


def test_nested_lists_optional_fields_and_either_shapes_are_followed():
    # marketdata's feed: authority, mint, maxStalenessSeconds and recent are documented as
    # optional (readFrom CHAIN only); a recorded feed leaves them out.
    feed = {"readFrom": "RECORD", "readAtSlot": 1, "round": 0, "value": None, "mantissa": 0, "exponent": -8, "observedAt": None, "updatedAt": None, "slot": None, "jobHash": ""}
    tree = shapes._tree(importlib.import_module("marketdata.serializers").FeedOutput())
    shapes._compare(feed, tree, "feed")
    with pytest.raises(shapes.ShapeMismatch, match=r"feed\.recent\[0\]"):
        shapes._compare({**feed, "recent": [{"round": 1}]}, tree, "feed")
    # an account field of an instrument: a recorded account or an unrecorded one, not a mix
    authority = shapes._tree(importlib.import_module("instruments.serializers").InstrumentOutput()).__getitem__(1)["mintAuthority"]
    unrecorded = {"onchain": {"id": "a", "lastTransactionId": None, "lastTransactionAt": None, "creationTransactionId": None, "creationTransactionAt": None},
                  "offchain": None, "managed": False, "status": None}
    shapes._compare(unrecorded, authority, "mintAuthority")
    with pytest.raises(shapes.ShapeMismatch, match="none of the documented shapes"):
        shapes._compare({**unrecorded, "canPayFees": True}, authority, "mintAuthority")
