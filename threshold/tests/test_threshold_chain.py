"""A 2-of-3 FROST key (two in-process players, one external player through its CLI) owns a
token account and a durable nonce on the local node: a token transfer signed by any two
lands, one player's signature is refused by the node, and solana-py reads the result."""

from __future__ import annotations

import pytest
from solana.rpc.core import RPCException
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import AdvanceNonceAccountParams, advance_nonce_account
from solders.transaction import Transaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import TransferCheckedParams, transfer_checked

from threshold import frost
from threshold import group as G
from threshold import messages as M
from threshold import signing as S
from threshold.tests.threshold_kit import InProcessPlayer, Player, client_env, write
from transactions.tests.chainkit import create_ata, create_mint, create_nonce, funded, mint_to, next_slot, nonce_value, wait

pytestmark = pytest.mark.chain


@pytest.fixture
def group_key(tmp_path):
    """Players 1 and 2 in this process, player 3 through the CLI; returns (players, public)."""
    external = Player(tmp_path / "external", client_env(tmp_path))
    external("init", "--scrypt-log-n", 14)
    backend = {1: InProcessPlayer(1), 2: InProcessPlayer(2)}
    round1 = [p.dkg_round1("chain-keygen", 2, [1, 2, 3]) for p in backend.values()]
    round1.append(external("dkg-round1", "--session", "chain-keygen", "--identifier", 3, "--threshold", 2, "--participants", "1,2,3"))
    round1_file = write(tmp_path / "round1.json", round1)
    round2 = [m for p in backend.values() for m in p.dkg_round2(round1)]
    round2 += external("dkg-round2", "--session", "chain-keygen", round1_file)
    round2_file = write(tmp_path / "round2.json", round2)
    publics = [p.dkg_finish(round2) for p in backend.values()]
    publics.append(external("dkg-finish", "--session", "chain-keygen", "--key", "treasury", round2_file))
    assert publics[0] == publics[1] == publics[2]
    return {**backend, 3: external}, M.from_json(publics[0]), tmp_path


def _frost_sign(players, public, signers, session: str, message: bytes, tmp_path) -> Signature:
    """The coordinator's view: commitments, one signing package, shares verified on arrival."""
    commitments = []
    for i in signers:
        player = players[i]
        commitments.append(player("commit", "--key", "treasury", "--session", session) if isinstance(player, Player) else player.commit(session))
    package = S.signing_package(session, public, message, [M.from_json(c) for c in commitments])
    package_json = M.to_json(package)
    shares = []
    for i in signers:
        player = players[i]
        share = player("sign", "--key", "treasury", write(tmp_path / f"{session}.json", package_json)) if isinstance(player, Player) else player.sign(package_json)
        parsed = M.from_json(share)
        assert S.verify_share(public, package, parsed)
        shares.append(parsed)
    return Signature.from_bytes(S.aggregate(public, package, shares).signature)


def test_two_of_three_sign_a_token_transfer_the_node_accepts(chain, group_key):
    players, public, tmp_path = group_key
    group = Pubkey.from_bytes(public.group_public_key)
    payer = funded(chain)
    wait(chain, chain.request_airdrop(group, 2 * 10**9).value)
    mint = create_mint(chain, payer, decimals=6)
    source = create_ata(chain, payer, group, mint)
    recipient = Keypair().pubkey()
    destination = create_ata(chain, payer, recipient, mint)
    mint_to(chain, payer, mint, source, 5_000_000)
    # A durable nonce under the group's authority: the signing session may take its time.
    nonce = create_nonce(chain, payer, group)
    next_slot(chain)  # a nonce stored in this slot is usable from the next one, as on a validator

    def transfer_message(amount: int) -> Message:
        return Message.new_with_blockhash([
            advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=group)),
            transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint, dest=destination,
                                                   owner=group, amount=amount, decimals=6)),
        ], group, nonce_value(chain, nonce))

    # One player alone: the coordinator refuses, and a signature made anyway is refused by the node.
    message = transfer_message(1_000_000)
    players[2].commit("alone")
    nonces = players[2].nonces.pop("alone").nonces
    with pytest.raises(frost.FrostError, match="needs 2 participants"):
        S.signing_package("alone", public, bytes(message), [S.SigningCommitment("alone", nonces.commitment)])
    commitment_list = [nonces.commitment]
    share = frost.sign(2, players[2].key.signing_share, public.group_public_key, nonces, bytes(message), commitment_list)
    binding = frost.compute_binding_factors(public.group_public_key, commitment_list, bytes(message))
    forged = Signature.from_bytes(frost.compute_group_commitment(commitment_list, binding) + share)
    with pytest.raises(RPCException, match="SignatureVerificationFailure"):
        chain.send_raw_transaction(bytes(Transaction.populate(message, [forged])))
    assert chain.get_token_account_balance(destination).value.amount == "0"

    # The external player and a backend player.
    signature = _frost_sign(players, public, [2, 3], "transfer-1", bytes(message), tmp_path)
    tx = Transaction.populate(message, [signature])
    tx.verify()
    landed = chain.send_raw_transaction(bytes(tx)).value
    assert landed == signature
    assert wait(chain, landed).err is None
    assert chain.get_token_account_balance(destination).value.amount == "1000000"

    # The two backend players, on the next nonce value.
    message = transfer_message(250_000)
    signature = _frost_sign(players, public, [1, 2], "transfer-2", bytes(message), tmp_path)
    assert wait(chain, chain.send_raw_transaction(bytes(Transaction.populate(message, [signature]))).value).err is None
    assert chain.get_token_account_balance(destination).value.amount == "1250000"
    assert chain.get_token_account_balance(source).value.amount == "3750000"
    fetched = chain.get_transaction(signature, max_supported_transaction_version=0).value
    assert fetched.transaction.transaction.signatures == [signature]
    assert G.decode_element(bytes(group)) == public.group_public_key
