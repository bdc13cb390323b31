"""Address lookup tables owned by tenants (docs/lookup-tables.md): the API (views, services,
selectors), the effects of their transactions, and the choice of tables V0 messages
compress through (compression.py). The model is transactions.models.AddressLookupTable."""

#: The operations of lookup-table transactions (Transaction.operation).
CREATE, EXTEND = "lookup_tables.create", "lookup_tables.extend"
FREEZE, DEACTIVATE, CLOSE = "lookup_tables.freeze", "lookup_tables.deactivate", "lookup_tables.close"
OPERATIONS = (CREATE, EXTEND, FREEZE, DEACTIVATE, CLOSE)
