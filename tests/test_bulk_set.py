"""ledger_project.bulk.bulk_set writes what bulk_update would (on the suite's database,
PostgreSQL or SQLite): integers, decimals, timestamps, foreign keys and NULLs, rows
untouched when not given, more rows than one statement holds."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import Account
from accounts.tests.factories import AccountFactory
from ledger_project import bulk
from ledger_project.bulk import bulk_set


@pytest.mark.django_db
def test_bulk_set_writes_each_rows_own_values_and_only_theirs(monkeypatch):
    monkeypatch.setattr(bulk, "BATCH", 2)  # three rows: two statements
    rows = [AccountFactory() for _ in range(4)]
    later = timezone.now() + timedelta(days=1)
    for i, row in enumerate(rows[:3]):
        row.lamports_balance = 10**12 + i
        row.token_balance = Decimal(10**14 + i) if i != 1 else None
        row.updated_at = later + timedelta(seconds=i)
        row.last_transaction_at = None if i == 2 else later
    untouched = Account.unscoped.get(pk=rows[3].pk)
    assert bulk_set(Account, rows[:3], ["lamports_balance", "token_balance", "updated_at", "last_transaction_at"]) == 3
    for i, row in enumerate(rows[:3]):
        stored = Account.unscoped.get(pk=row.pk)
        assert int(stored.lamports_balance) == 10**12 + i
        assert stored.token_balance == (Decimal(10**14 + i) if i != 1 else None)
        assert stored.updated_at == later + timedelta(seconds=i)
        assert stored.last_transaction_at == (None if i == 2 else later)
    again = Account.unscoped.get(pk=rows[3].pk)
    assert (again.lamports_balance, again.token_balance, again.updated_at) == (untouched.lamports_balance, untouched.token_balance, untouched.updated_at)
    assert bulk_set(Account, [], ["lamports_balance"]) == 0
