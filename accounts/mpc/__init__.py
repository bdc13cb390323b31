"""Threshold keys in the service (issue 19, phase B; docs/threshold-signing.md): DKG accounts,
their backend players' sealed shares, signing sessions and share refresh, on the protocol
of ``threshold`` (which imports no Django)."""
