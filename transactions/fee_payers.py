"""The platform's own signers per cluster: the default fee payer and the nonce pool.

On CHAIN_LOCALNET the fee payer is funded by airdrop whenever it runs low; on other
clusters operators fund it (its address is in the admin and in /healthz-adjacent docs).
"""

from __future__ import annotations

import threading
import time

from django.db import IntegrityError, transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, InitializeNonceAccountParams, create_account, initialize_nonce_account

from .chain import builder
from .chain.rpc import is_localnet, rpc_for
from .models import NonceAccount, PlatformFeePayer

LOCALNET_MIN_BALANCE = 10 * 10**9
LOCALNET_TOP_UP = 1_000 * 10**9
_checked: dict[str, float] = {}
_lock = threading.Lock()


def _fee_payer_row(cluster: str) -> PlatformFeePayer:
    from accounts.custody import managed_key_generate

    row = PlatformFeePayer.objects.select_related("managed_key").filter(cluster=cluster).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return PlatformFeePayer.objects.create(cluster=cluster, managed_key=managed_key_generate())
    except IntegrityError:  # another process created it first
        return PlatformFeePayer.objects.select_related("managed_key").get(cluster=cluster)


def platform_fee_payer(cluster: str):
    """SignerSpec of the cluster's platform fee payer (funded on localnet)."""
    from .services import SignerSpec

    row = _fee_payer_row(cluster)
    pubkey = Pubkey.from_string(row.managed_key.public_key)
    if is_localnet(cluster):
        ensure_localnet_funds(cluster, pubkey)
    return SignerSpec(pubkey, row.managed_key)


def ensure_localnet_funds(cluster: str, pubkey: Pubkey, minimum: int = LOCALNET_MIN_BALANCE) -> None:
    # Checked at most every 10 s per process: an airdrop is cheap, a balance call per
    # request is not free.
    key = f"{cluster}:{pubkey}"
    with _lock:
        if time.monotonic() - _checked.get(key, 0) < 10:
            return
        _checked[key] = time.monotonic()
    rpc = rpc_for(cluster)
    if rpc.balance(pubkey) < minimum:
        signature = rpc.airdrop(pubkey, LOCALNET_TOP_UP)
        for _ in range(100):
            status = rpc.signature_statuses([signature])[0]
            if status is not None:
                break
            time.sleep(0.05)


def nonce_account_create(cluster: str) -> NonceAccount:
    """Create and initialize a new nonce account for the pool (its own transaction, sent
    and confirmed synchronously: a pool entry must exist on chain before use)."""
    from accounts.custody import managed_key_generate, managed_key_signer

    rpc = rpc_for(cluster)
    payer = platform_fee_payer(cluster)
    authority_key = managed_key_generate()
    authority = Pubkey.from_string(authority_key.public_key)
    nonce_keypair = Keypair()
    lamports = rpc.minimum_balance_for_rent_exemption(builder.NONCE_ACCOUNT_SIZE)
    instructions = [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey, to_pubkey=nonce_keypair.pubkey(), lamports=lamports, space=builder.NONCE_ACCOUNT_SIZE, owner=Pubkey.from_string("11111111111111111111111111111111"))),
        initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=nonce_keypair.pubkey(), authority=authority)),
    ]
    built = builder.build(builder.BuildPlan(instructions=instructions, fee_payer=payer.pubkey, version="LEGACY"), rpc)
    message = built.to_bytes()
    signatures = {str(nonce_keypair.pubkey()): str(nonce_keypair.sign_message(message))}
    signatures[str(payer.pubkey)] = str(managed_key_signer(key=payer.managed_key).sign_message(message))
    signature = rpc.send_raw(bytes(builder.assemble(built.message, signatures)))
    for _ in range(200):
        status = rpc.signature_statuses([signature])[0]
        if status is not None:
            if status.err is not None:
                raise RuntimeError(f"nonce account creation failed: {status.err}")
            break
        time.sleep(0.05)
    else:
        raise RuntimeError("nonce account creation did not land")
    # The runtime refuses to advance a nonce within the blockhash it was stored under:
    # wait for the next blockhash so the first lease can be used at once.
    for _ in range(100):
        if rpc.latest_blockhash().blockhash != built.blockhash:
            break
        time.sleep(0.05)
    return NonceAccount.objects.create(cluster=cluster, address=str(nonce_keypair.pubkey()), authority_key=authority_key)


# --- lease API (helper B replaces) ---
def nonce_lease(*, cluster: str) -> NonceAccount:
    """A free nonce account of the pool for one transaction being built (network phase,
    no caller transaction open). Minimal stand-in: picks a free row (creating one when the
    pool is empty); ``services.transaction_record`` binds it with a conditional update."""
    row = NonceAccount.objects.filter(cluster=cluster, leased_by__isnull=True).order_by("pk").first()
    if row is None:
        row = nonce_account_create(cluster)
    return row


def nonce_lease_release(*, nonce_account_id: int) -> None:
    """Give back a lease whose transaction was never recorded (stand-in: nothing to undo,
    the stand-in lease marks nothing until the transaction binds it)."""
    return None
