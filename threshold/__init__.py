"""Threshold Ed25519 keys: FROST(Ed25519, SHA-512) (RFC 9591), its distributed key
generation and share refresh, their JSON messages, and the external player.

Pure Python on PyNaCl (libsodium) and ``cryptography``: nothing in this package imports
Django, so a client uses it (``python -m threshold.player``) without the service.
docs/threshold-signing.md describes the protocol, the message formats and the storage.
"""
