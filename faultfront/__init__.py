"""The fault front: a JSON-RPC HTTP proxy that behaves like real RPC providers on a bad day.

Put it between the service (or a test, or a bench) and any node: rate limits answered
with 429 and Retry-After, a lagging view (stale blockhashes and reads, -32016), sends
accepted and dropped or landed late, transient 502/503, -32005, hangs and resets, pruned
history, disabled methods and the old blockstore's order within a slot. Every choice is
drawn from a seed, so a failing run replays. Profiles are data (``profiles.py``, or a JSON
file); docs/chain.md "The fault front" describes each. Standard library only, nothing of
the Django project: a server of its own, like ``localnet/``.
"""
