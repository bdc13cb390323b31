"""The external FROST player: a passphrase-encrypted local store of key shares and nonces
(``store``), the protocol steps on JSON messages (``operations``), and the command line
(``python -m threshold.player``). No Django: a client runs it on its own."""

from .operations import NonceReuse
from .store import Store, StoreError, WrongPassphrase

__all__ = ["NonceReuse", "Store", "StoreError", "WrongPassphrase"]
