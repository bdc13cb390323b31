"""The ABI definitions (programs/toolchain/abi.py and each program's abi.py): layouts the C
structs can mirror exactly, encoders that refuse what does not fit, and committed outputs
(headers, manifest) that match their definitions and the committed programs."""

from __future__ import annotations

import hashlib
import json

import pytest

from programs import ROOT
from programs.allowlist_hook import abi as hook_abi
from programs.loan_vault import abi as vault_abi
from programs.price_feed import abi as feed_abi
from programs.toolchain.abi import AbiError, Account, Error, Instruction, ProgramAbi, Struct
from programs.toolchain.build import program_names

ABIS = {"allowlist_hook": hook_abi.ABI, "loan_vault": vault_abi.ABI, "price_feed": feed_abi.ABI}
#: Each program's range of custom error codes (docs/programs.md, "ABIs defined once").
ERROR_RANGES = {"allowlist_hook": (7001, 7099), "loan_vault": (7101, 7199), "price_feed": (7301, 7399)}


def test_fields_must_sit_at_their_natural_alignment():
    with pytest.raises(AbiError, match=r"S\.amount \(u64\) at offset 1 is not 8-aligned"):
        Struct("S", [("tag", "u8"), ("amount", "u64")])
    with pytest.raises(AbiError, match="not a multiple of its alignment 8"):
        Struct("S", [("amount", "u64"), ("tag", "u8")])
    s = Struct("S", [("tag", "u8"), ("_pad", "u8[7]"), ("amount", "u64"), ("key", "pubkey")])
    assert (s.size, s.offset("amount"), s.offset("key")) == (48, 8, 16)


def test_pack_and_unpack_round_trip_and_refuse_what_does_not_fit():
    s = Struct("S", [("tag", "u8"), ("small", "u8"), ("_pad", "u16"), ("count", "u32"), ("amount", "u64"), ("key", "pubkey")])
    key = bytes(range(32))
    raw = s.pack(tag=1, small=255, count=7, amount=2**64 - 1, key=key)
    assert raw[2:4] == b"\0\0"  # padding is zero
    assert s.unpack(raw) == {"tag": 1, "small": 255, "count": 7, "amount": 2**64 - 1, "key": key}
    with pytest.raises(AbiError, match="does not fit in u8"):
        s.pack(tag=1, small=256, count=7, amount=0, key=key)
    with pytest.raises(AbiError, match="does not fit in u64"):
        s.pack(tag=1, small=0, count=7, amount=-1, key=key)
    with pytest.raises(AbiError, match="takes 32 bytes"):
        s.pack(tag=1, small=0, count=7, amount=0, key=key[:31])
    with pytest.raises(AbiError, match="S.count is missing"):
        s.pack(tag=1, small=0, amount=0, key=key)
    with pytest.raises(AbiError, match="has no field colour"):
        s.pack(tag=1, small=0, count=1, amount=0, key=key, colour=3)


def test_signed_fields_round_trip_in_twos_complement_and_refuse_what_does_not_fit():
    s = Struct("S", [("exponent", "i32"), ("_pad", "u32"), ("value", "i64")])
    raw = s.pack(exponent=-8, value=-(2**63))
    assert raw[:4] == b"\xf8\xff\xff\xff" and s.unpack(raw) == {"exponent": -8, "value": -(2**63)}
    assert s.unpack(s.pack(exponent=2**31 - 1, value=2**63 - 1)) == {"exponent": 2**31 - 1, "value": 2**63 - 1}
    with pytest.raises(AbiError, match="does not fit in i32"):
        s.pack(exponent=2**31, value=0)
    with pytest.raises(AbiError, match="does not fit in i64"):
        s.pack(exponent=0, value=-(2**63) - 1)
    with pytest.raises(AbiError, match=r"S\.value \(i64\) at offset 4 is not 8-aligned"):
        Struct("S", [("exponent", "i32"), ("value", "i64")])
    assert "i64 value;" in s.c_definition() and "i32 exponent;" in s.c_definition()


def test_an_instruction_encodes_its_selector_and_decodes_only_its_own_data():
    ix = vault_abi.ABI.instruction("Repayment")
    data = ix.encode(sequence=9, amount=400)
    assert data[0] == 2 and len(data) == 24
    assert ix.decode(data) == {"sequence": 9, "amount": 400}
    with pytest.raises(AbiError, match="not a Repayment instruction"):
        ix.decode(bytes([3]) + data[1:])
    execute = hook_abi.ABI.instruction("Execute")
    assert execute.encode(amount=5) == hook_abi.EXECUTE_DISCRIMINATOR + (5).to_bytes(8, "little")


def test_a_program_abi_refuses_duplicate_codes_and_selectors():
    args = Struct("A", [("tag", "u8")])
    with pytest.raises(AbiError, match="duplicate error codes"):
        ProgramAbi("p", "P", "", errors=[Error("A", 7, ""), Error("B", 7, "")])
    with pytest.raises(AbiError, match="duplicate instruction selectors"):
        ProgramAbi("p", "P", "", instructions=[Instruction("A", 0, args, (Account("x"),)), Instruction("B", 0, args, (Account("x"),))])


@pytest.mark.parametrize("name", sorted(ABIS))
def test_error_codes_are_one_per_name_in_the_program_range_and_clear_of_the_token_programs(name):
    errors = ABIS[name].errors
    codes = [e.code for e in errors]
    low, high = ERROR_RANGES[name]
    assert codes == sorted(set(codes)) and all(low <= c <= high for c in codes)  # SPL Token / Token-2022 use < 100
    assert len({e.name for e in errors}) == len(errors)


def test_the_hook_validation_data_is_the_interface_layout_naming_the_allow_list():
    from solders.instruction import AccountMeta
    from solders.pubkey import Pubkey

    from instruments.token2022.transfer_hook import decode_extra_account_metas, resolve_extra_accounts

    metas = decode_extra_account_metas(hook_abi.VALIDATION_DATA)
    assert len(metas) == 1 and not metas[0].is_signer and not metas[0].is_writable
    program, mint = Pubkey.new_unique(), Pubkey.new_unique()
    execute = [AccountMeta(k, False, False) for k in (Pubkey.new_unique(), mint, Pubkey.new_unique(), Pubkey.new_unique(), Pubkey.new_unique())]
    (resolved,) = resolve_extra_accounts(metas, program=program, execute_accounts=execute, instruction_data=b"", fetch=lambda _: None)
    assert resolved.pubkey == Pubkey.find_program_address([hook_abi.SEED_ALLOW_LIST, bytes(mint)], program)[0]


def test_every_program_folder_has_its_abi():
    assert program_names() == sorted(ABIS)


@pytest.mark.parametrize("name", sorted(ABIS))
def test_the_committed_header_is_generated_from_the_definition(name):
    # `make programs` writes it; scripts/programs_check.py rebuilds everything in CI.
    assert (ROOT / name / "abi.h").read_text() == ABIS[name].c_header(), f"programs/{name}/abi.h is stale: run make programs"


def test_the_manifest_describes_the_committed_programs():
    manifest = json.loads((ROOT / "manifest.json").read_text())
    assert sorted(manifest["programs"]) == sorted(ABIS)
    assert "-mcpu=v2" in manifest["flags"]
    for name, info in manifest["programs"].items():
        data = (ROOT / name / f"{name}.so").read_bytes()
        assert (info["size"], info["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("name,tests", [
    ("allowlist_hook", ["test_allowlist_hook.py"]),
    ("loan_vault", ["test_loan_vault.py", "test_loan_vault_checks.py"]),
    ("price_feed", ["test_price_feed.py", "test_price_feed_checks.py", "test_price_feed_clock.py"]),
])
def test_every_custom_error_has_a_test_that_expects_it(name, tests):
    """One negative test per check: each error name is expected somewhere in the
    program's tests (they assert ``outcome.custom == E[name]``)."""
    source = "".join((ROOT / "tests" / t).read_text() for t in tests)
    untested = [e.name for e in ABIS[name].errors if f'"{e.name}"' not in source]
    assert not untested, f"{name}: no test expects {untested}"


@pytest.mark.parametrize("name", sorted(ABIS))
def test_docs_list_every_error_with_its_code(name):
    docs = (ROOT.parent / "docs" / "programs.md").read_text()
    missing = [e.name for e in ABIS[name].errors if f"| {e.code} | `{e.name}` | {e.message} |" not in docs]
    assert not missing, f"docs/programs.md does not list {name}'s {missing}"
