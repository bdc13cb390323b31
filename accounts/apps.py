from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"

    def ready(self) -> None:
        from chain.errors import register_own_addresses
        from transactions.dkg_signers import register_dkg_signer
        from transactions.fees import register_fee_payer_rule
        from transactions.resign import register_resign_signers
        from transactions.signatures import register_account_signer

        from . import effects  # noqa: F401  (registers the area's transaction effects)
        from .fee_payer import fee_payer_rule
        from .mpc import keyring
        from .mpc.sessions import DkgSigner
        from .selectors import tenant_own_addresses
        from .signers import resign_signers, sign_transaction_signer

        # Sign Transaction resolves the accounts it names through this area (transactions/signatures.py).
        register_account_signer(sign_transaction_signer)
        # ... and its dkgSigning entries (threshold signing, accounts/mpc/sessions.py).
        register_dkg_signer(DkgSigner())
        # A failed simulation names an account to its caller only when the caller owns it.
        register_own_addresses(tenant_own_addresses)
        # Paying a transaction's fee debits the account that pays it (transactions/fees.py).
        register_fee_payer_rule(fee_payer_rule)
        # ... and signing a dropped transaction again only with keys it may still use (transactions/resign.py).
        register_resign_signers(resign_signers)
        # Each backend player's key is its own: refuse to start otherwise (docs/threshold-signing.md).
        keyring.check_keyrings()
