"""Address lookup tables owned by tenants (docs/lookup-tables.md): the API (views, services,
selectors), the effects of their transactions (operation names: operations.py), and the
choice of tables V0 messages compress through (compression.py). The model is
lookup_tables.models.AddressLookupTable."""
