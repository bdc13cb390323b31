from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"

    def ready(self) -> None:
        from transactions.signatures import register_account_signer, register_dkg_signer

        from . import effects  # noqa: F401  (registers the area's transaction effects)
        from .mpc import keyring
        from .mpc.sessions import DkgSigner
        from .signers import sign_transaction_signer

        # Sign Transaction resolves the accounts it names through this area (transactions/signatures.py).
        register_account_signer(sign_transaction_signer)
        # ... and its dkgSigning entries (threshold signing, accounts/mpc/sessions.py).
        register_dkg_signer(DkgSigner())
        # Each backend player's key is its own: refuse to start otherwise (docs/threshold-signing.md).
        keyring.check_keyrings()
