"""Token-2022 encoders executed on the local node; accounts decoded independently of them.

Each test creates a real mint with the extension(s), reads the account back over RPC,
and checks the decoded configuration and that its size equals the calculator's.
"""

from __future__ import annotations

import itertools

import pytest
from solana.rpc.core import RPCException
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from spl.token.instructions import MintToCheckedParams, TransferCheckedParams, create_associated_token_account, get_associated_token_address, mint_to_checked, transfer_checked

from instruments.token2022 import instructions as t22
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, AccountState, AuthorityType, ExtensionType
from instruments.token2022.sizes import mint_size, mint_space
from instruments.token2022.tlv import decode_mint
from transactions.tests.chainkit import funded, send

pytestmark = pytest.mark.chain


def make_mint(chain, payer: Keypair, extensions: set[ExtensionType], init_ixs, *, metadata=None, post_ixs=(), decimals=6, freeze=None) -> Pubkey:
    mint = Keypair()
    space = mint_space(extensions)
    lamports = chain.get_minimum_balance_for_rent_exemption(mint_size(extensions, metadata)).value
    ixs = [create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=lamports, space=space, owner=TOKEN_2022_PROGRAM_ID))]
    ixs += init_ixs(mint.pubkey())
    ixs.append(t22.initialize_mint2(mint=mint.pubkey(), decimals=decimals, mint_authority=payer.pubkey(), freeze_authority=freeze))
    ixs += post_ixs(mint.pubkey()) if callable(post_ixs) else list(post_ixs)
    send(chain, payer, ixs, [mint])
    return mint.pubkey()


def read(chain, mint: Pubkey):
    account = chain.get_account_info(mint).value
    return decode_mint(bytes(account.data)), len(account.data)


@pytest.fixture
def payer(chain):
    return funded(chain, 20 * 10**9)


def test_plain_mint(chain, payer):
    mint = make_mint(chain, payer, set(), lambda m: [], freeze=payer.pubkey())
    decoded, size = read(chain, mint)
    assert size == 82 == mint_size(set())
    assert decoded.mint_authority == str(payer.pubkey()) and decoded.freeze_authority == str(payer.pubkey()) and decoded.decimals == 6


def test_mint_close_authority(chain, payer):
    closer = Keypair().pubkey()
    mint = make_mint(chain, payer, {ExtensionType.MINT_CLOSE_AUTHORITY}, lambda m: [t22.initialize_mint_close_authority(mint=m, close_authority=closer)])
    decoded, size = read(chain, mint)
    assert decoded.extensions["MINT_CLOSE_AUTHORITY"] == {"closeAuthority": str(closer)}
    assert size == mint_size({ExtensionType.MINT_CLOSE_AUTHORITY})


def test_permanent_delegate(chain, payer):
    delegate = Keypair().pubkey()
    mint = make_mint(chain, payer, {ExtensionType.PERMANENT_DELEGATE}, lambda m: [t22.initialize_permanent_delegate(mint=m, delegate=delegate)])
    decoded, size = read(chain, mint)
    assert decoded.extensions["PERMANENT_DELEGATE"] == {"delegate": str(delegate)} and size == mint_size({ExtensionType.PERMANENT_DELEGATE})


def test_default_account_state_frozen(chain, payer):
    mint = make_mint(chain, payer, {ExtensionType.DEFAULT_ACCOUNT_STATE}, lambda m: [t22.initialize_default_account_state(mint=m, state=AccountState.FROZEN)], freeze=payer.pubkey())
    decoded, _ = read(chain, mint)
    assert decoded.extensions["DEFAULT_ACCOUNT_STATE"] == {"state": "FROZEN"}
    send(chain, payer, [t22.update_default_account_state(mint=mint, freeze_authority=payer.pubkey(), state=AccountState.INITIALIZED)])
    assert read(chain, mint)[0].extensions["DEFAULT_ACCOUNT_STATE"] == {"state": "INITIALIZED"}


def test_transfer_hook(chain, payer):
    program = Keypair().pubkey()
    mint = make_mint(chain, payer, {ExtensionType.TRANSFER_HOOK}, lambda m: [t22.initialize_transfer_hook(mint=m, authority=payer.pubkey(), program_id=program)])
    decoded, size = read(chain, mint)
    assert decoded.extensions["TRANSFER_HOOK"] == {"authority": str(payer.pubkey()), "programId": str(program)} and size == mint_size({ExtensionType.TRANSFER_HOOK})
    send(chain, payer, [t22.update_transfer_hook(mint=mint, authority=payer.pubkey(), program_id=None)])
    assert read(chain, mint)[0].extensions["TRANSFER_HOOK"]["programId"] is None


def test_scaled_ui_amount(chain, payer):
    mint = make_mint(chain, payer, {ExtensionType.SCALED_UI_AMOUNT}, lambda m: [t22.initialize_scaled_ui_amount(mint=m, authority=payer.pubkey(), multiplier=1.5)])
    decoded, size = read(chain, mint)
    assert decoded.extensions["SCALED_UI_AMOUNT"]["multiplier"] == 1.5 and size == mint_size({ExtensionType.SCALED_UI_AMOUNT})
    send(chain, payer, [t22.update_scaled_ui_multiplier(mint=mint, authority=payer.pubkey(), multiplier=2.0, effective_timestamp=0)])
    assert read(chain, mint)[0].extensions["SCALED_UI_AMOUNT"]["newMultiplier"] == 2.0


def test_the_program_takes_only_positive_normal_multipliers_and_so_does_the_service(chain, payer):
    # Found by schemathesis: a multiplier of 5e-324 (positive, subnormal) passed the service's
    # check and failed in simulation (custom program error 0x42, InvalidScale).
    import sys

    from instruments.extensions import multiplier_of
    from ledger_project.api.errors import LedgerError

    mint = make_mint(chain, payer, {ExtensionType.SCALED_UI_AMOUNT}, lambda m: [t22.initialize_scaled_ui_amount(mint=m, authority=payer.pubkey(), multiplier=1.0)])
    for refused in (5e-324, sys.float_info.min / 2):
        with pytest.raises(RPCException, match="0x42"):
            send(chain, payer, [t22.update_scaled_ui_multiplier(mint=mint, authority=payer.pubkey(), multiplier=refused, effective_timestamp=0)])
        with pytest.raises(LedgerError) as err:
            multiplier_of(refused, "itemData.scaledUiAmountMultiplier")
        assert err.value.code == "OUT_OF_RANGE"
    send(chain, payer, [t22.update_scaled_ui_multiplier(mint=mint, authority=payer.pubkey(), multiplier=sys.float_info.min, effective_timestamp=0)])
    assert read(chain, mint)[0].extensions["SCALED_UI_AMOUNT"]["newMultiplier"] == sys.float_info.min == multiplier_of(sys.float_info.min, "f")


def test_confidential_transfer_and_mint_burn(chain, payer):
    extensions = {ExtensionType.CONFIDENTIAL_TRANSFER_MINT, ExtensionType.CONFIDENTIAL_MINT_BURN}
    supply_key = bytes(Keypair().pubkey())  # any valid point encoding is not needed at init
    mint = make_mint(chain, payer, extensions, lambda m: [
        t22.initialize_confidential_transfer_mint(mint=m, authority=payer.pubkey(), auto_approve_new_accounts=True),
        t22.initialize_confidential_mint_burn(mint=m, supply_elgamal_pubkey=supply_key, decryptable_supply=bytes(36)),
    ])
    decoded, size = read(chain, mint)
    assert decoded.extensions["CONFIDENTIAL_TRANSFER_MINT"]["autoApproveNewAccounts"] is True
    assert "CONFIDENTIAL_MINT_BURN" in decoded.extensions and size == mint_size(extensions)


def test_metadata_pointer_to_the_mint_itself(chain, payer):
    mint = make_mint(chain, payer, {ExtensionType.METADATA_POINTER}, lambda m: [t22.initialize_metadata_pointer(mint=m, authority=payer.pubkey(), metadata_address=m)])
    decoded, size = read(chain, mint)
    assert decoded.extensions["METADATA_POINTER"] == {"authority": str(payer.pubkey()), "metadataAddress": str(mint)}
    assert size == mint_size({ExtensionType.METADATA_POINTER})
    other = Keypair().pubkey()
    send(chain, payer, [t22.update_metadata_pointer(mint=mint, authority=payer.pubkey(), metadata_address=other)])
    assert read(chain, mint)[0].extensions["METADATA_POINTER"]["metadataAddress"] == str(other)


def test_metadata_pointer_and_token_metadata_with_custom_keys(chain, payer):
    extensions = {ExtensionType.METADATA_POINTER, ExtensionType.TOKEN_METADATA}
    metadata = {"name": "Acme Bond 2030", "symbol": "ACB30", "uri": "https://example.com/acb30.json", "additional": {"isin": "US0000000001", "coupon": "4.25"}}
    mint = make_mint(chain, payer, extensions, lambda m: [t22.initialize_metadata_pointer(mint=m, authority=payer.pubkey(), metadata_address=m)], metadata=metadata,
                     post_ixs=lambda m: [
                         t22.initialize_token_metadata(mint=m, update_authority=payer.pubkey(), mint_authority=payer.pubkey(), name=metadata["name"], symbol=metadata["symbol"], uri=metadata["uri"]),
                         *[t22.update_token_metadata_field(mint=m, update_authority=payer.pubkey(), field=k, value=v) for k, v in metadata["additional"].items()],
                     ])
    decoded, size = read(chain, mint)
    meta = decoded.extensions["TOKEN_METADATA"]
    assert (meta["name"], meta["symbol"], meta["uri"], meta["additionalMetadata"]) == (metadata["name"], metadata["symbol"], metadata["uri"], metadata["additional"])
    assert meta["updateAuthority"] == str(payer.pubkey()) and meta["mint"] == str(mint)
    assert size == mint_size(extensions, metadata)
    send(chain, payer, [t22.update_token_metadata_field(mint=mint, update_authority=payer.pubkey(), field=t22.FIELD_NAME, value="Renamed"),
                        t22.remove_token_metadata_key(mint=mint, update_authority=payer.pubkey(), key="coupon")])
    meta = read(chain, mint)[0].extensions["TOKEN_METADATA"]
    assert meta["name"] == "Renamed" and meta["additionalMetadata"] == {"isin": "US0000000001"}
    new_authority = Keypair().pubkey()
    send(chain, payer, [t22.update_token_metadata_authority(mint=mint, current_authority=payer.pubkey(), new_authority=new_authority)])
    assert read(chain, mint)[0].extensions["TOKEN_METADATA"]["updateAuthority"] == str(new_authority)


def test_token_metadata_encoding_and_sizes():
    """Encoder bytes and the TLV size arithmetic, independently of the program."""
    from instruments.token2022.sizes import token_metadata_size
    from instruments.token2022.tlv import decode_token_metadata

    ix = t22.initialize_token_metadata(mint=Keypair().pubkey(), update_authority=Keypair().pubkey(), mint_authority=Keypair().pubkey(), name="Acme", symbol="ACM", uri="u")
    assert bytes(ix.data)[:8] == __import__("hashlib").sha256(b"spl_token_metadata_interface:initialize_account").digest()[:8]
    assert bytes(ix.data)[8:] == b"\x04\x00\x00\x00Acme" + b"\x03\x00\x00\x00ACM" + b"\x01\x00\x00\x00u"
    authority, mint = Keypair().pubkey(), Keypair().pubkey()
    value = bytes(authority) + bytes(mint) + b"\x04\x00\x00\x00Acme\x03\x00\x00\x00ACM\x01\x00\x00\x00u" + b"\x01\x00\x00\x00" + b"\x01\x00\x00\x00k\x02\x00\x00\x00vv"
    assert len(value) == token_metadata_size(name="Acme", symbol="ACM", uri="u", additional={"k": "vv"})
    assert decode_token_metadata(value) == {"updateAuthority": str(authority), "mint": str(mint), "name": "Acme", "symbol": "ACM", "uri": "u", "additionalMetadata": {"k": "vv"}}


def test_pause_blocks_transfers_and_resume_allows_them(chain, payer):
    mint = make_mint(chain, payer, {ExtensionType.PAUSABLE}, lambda m: [t22.initialize_pausable(mint=m, authority=payer.pubkey())])
    owner = Keypair()
    source = get_associated_token_address(payer.pubkey(), mint, TOKEN_2022_PROGRAM_ID)
    dest = get_associated_token_address(owner.pubkey(), mint, TOKEN_2022_PROGRAM_ID)
    send(chain, payer, [create_associated_token_account(payer.pubkey(), payer.pubkey(), mint, TOKEN_2022_PROGRAM_ID),
                        create_associated_token_account(payer.pubkey(), owner.pubkey(), mint, TOKEN_2022_PROGRAM_ID),
                        mint_to_checked(MintToCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, mint=mint, dest=source, mint_authority=payer.pubkey(), amount=1000, decimals=6))])

    def move(amount):
        return [transfer_checked(TransferCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, source=source, mint=mint, dest=dest, owner=payer.pubkey(), amount=amount, decimals=6))]

    send(chain, payer, [t22.pause(mint=mint, authority=payer.pubkey())])
    assert read(chain, mint)[0].extensions["PAUSABLE"]["paused"] is True
    with pytest.raises(RPCException):
        send(chain, payer, move(10))
    send(chain, payer, [t22.resume(mint=mint, authority=payer.pubkey())])
    send(chain, payer, move(10))
    assert chain.get_token_account_balance(dest).value.amount == "10"


def test_set_authority_for_mint_authorities(chain, payer):
    mint = make_mint(chain, payer, {ExtensionType.MINT_CLOSE_AUTHORITY, ExtensionType.PAUSABLE},
                     lambda m: [t22.initialize_mint_close_authority(mint=m, close_authority=payer.pubkey()), t22.initialize_pausable(mint=m, authority=payer.pubkey())], freeze=payer.pubkey())
    new = Keypair().pubkey()
    send(chain, payer, [
        t22.set_authority(target=mint, current=payer.pubkey(), authority_type=AuthorityType.CLOSE_MINT, new_authority=new),
        t22.set_authority(target=mint, current=payer.pubkey(), authority_type=AuthorityType.PAUSE, new_authority=new),
        t22.set_authority(target=mint, current=payer.pubkey(), authority_type=AuthorityType.FREEZE_ACCOUNT, new_authority=None),
    ])
    decoded, _ = read(chain, mint)
    assert decoded.extensions["MINT_CLOSE_AUTHORITY"]["closeAuthority"] == str(new)
    assert decoded.extensions["PAUSABLE"]["authority"] == str(new)
    assert decoded.freeze_authority is None


FIXED = [ExtensionType.MINT_CLOSE_AUTHORITY, ExtensionType.PERMANENT_DELEGATE, ExtensionType.DEFAULT_ACCOUNT_STATE, ExtensionType.METADATA_POINTER, ExtensionType.TRANSFER_HOOK, ExtensionType.SCALED_UI_AMOUNT, ExtensionType.PAUSABLE]


def _init(kind, mint, payer):
    return {
        ExtensionType.MINT_CLOSE_AUTHORITY: lambda: t22.initialize_mint_close_authority(mint=mint, close_authority=payer),
        ExtensionType.PERMANENT_DELEGATE: lambda: t22.initialize_permanent_delegate(mint=mint, delegate=payer),
        ExtensionType.DEFAULT_ACCOUNT_STATE: lambda: t22.initialize_default_account_state(mint=mint, state=AccountState.INITIALIZED),
        ExtensionType.METADATA_POINTER: lambda: t22.initialize_metadata_pointer(mint=mint, authority=payer, metadata_address=mint),
        ExtensionType.TRANSFER_HOOK: lambda: t22.initialize_transfer_hook(mint=mint, authority=payer, program_id=None),
        ExtensionType.SCALED_UI_AMOUNT: lambda: t22.initialize_scaled_ui_amount(mint=mint, authority=payer, multiplier=1.0),
        ExtensionType.PAUSABLE: lambda: t22.initialize_pausable(mint=mint, authority=payer),
    }[kind]()


@pytest.mark.parametrize("combo", [c for r in (2, 3, 5, 7) for c in itertools.combinations(FIXED, r)][::7], ids=lambda c: "+".join(e.name for e in c))
def test_calculator_matches_created_accounts(chain, payer, combo):
    extensions = set(combo)
    mint = make_mint(chain, payer, extensions, lambda m: [_init(e, m, payer.pubkey()) for e in combo], freeze=payer.pubkey())
    decoded, size = read(chain, mint)
    assert size == mint_size(extensions)
    assert set(decoded.extensions) == {e.name for e in combo}
