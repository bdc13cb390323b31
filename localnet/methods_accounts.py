"""Account, token and supply methods, read at the bank a request's commitment names."""

from __future__ import annotations

import base64

from solders.pubkey import Pubkey

from ledger_project.base58 import b58decode

from . import genesis, tokens
from .encoding import check_encoding, data_slice, encode_account
from .parsing import NATIVE_MINT, mint_decimals
from .rpcutil import bad, config, param, pubkey
from .errors import RpcError

MAX_MULTIPLE_ACCOUNTS = 100
MAX_FILTERS = 4
NUM_LARGEST_ACCOUNTS = 20


def _invalid(message: str) -> RpcError:
    return RpcError(-32602, message)


class AccountMethods:
    node: object

    # --- helpers --------------------------------------------------------------------------
    def _account_cfg(self, cfg: dict, default: str) -> tuple[str, tuple[int, int] | None]:
        encoding = cfg.get("encoding") or default
        sliced = data_slice(cfg)
        check_encoding(encoding, sliced is not None)
        return encoding, sliced

    def _getter(self, at):
        return lambda key: self.node.account(key, at)

    def _encode(self, key: Pubkey, acc, encoding: str, sliced, at) -> dict | None:
        if acc is None:
            return None
        return encode_account(key, acc, encoding, sliced, self._getter(at))

    def _owned_by(self, program: Pubkey, at: int | None):
        """(key, account) of every account the program owns in the bank at ``at``."""
        keys = self.node.store.accounts_by_owner(str(program))
        if at is not None:  # accounts whose owner may differ at that slot
            keys = sorted(set(keys) | set(self.node.written_after(at)))
        for key in keys:
            acc = self.node.account(Pubkey.from_string(key), at)
            if acc is not None and acc.owner == program:
                yield key, acc

    @staticmethod
    def _check_filters(filters) -> list:
        if not isinstance(filters, list):
            raise bad("filters must be an array")
        if len(filters) > MAX_FILTERS:
            raise _invalid(f"Too many filters provided; max {MAX_FILTERS}")
        out = []
        for flt in filters:
            if not isinstance(flt, dict):
                raise bad(f"unknown filter {flt!r}")
            if "dataSize" in flt:
                if not isinstance(flt["dataSize"], int) or flt["dataSize"] < 0:
                    raise bad("dataSize must be an unsigned integer")
                out.append(("size", flt["dataSize"]))
            elif "memcmp" in flt:
                memcmp = flt["memcmp"]
                encoding = memcmp.get("encoding") or "base58"
                raw = memcmp.get("bytes")
                if not isinstance(raw, str) or not isinstance(memcmp.get("offset", 0), int):
                    raise bad("memcmp needs offset and bytes")
                try:
                    wanted = base64.b64decode(raw, validate=True) if encoding == "base64" else b58decode(raw)
                except ValueError:
                    raise _invalid(f"Invalid param: {encoding} decoding failed")
                if len(wanted) > 128:
                    raise _invalid("Encoded binary data should be less than 129 bytes")
                out.append(("memcmp", memcmp.get("offset", 0), wanted))
            elif "tokenAccountState" in flt:
                out.append(("token", None))
            else:
                raise bad(f"unknown filter {flt!r}")
        return out

    @staticmethod
    def _matches(acc, filters: list) -> bool:
        data = bytes(acc.data)
        for flt in filters:
            if flt[0] == "size" and len(data) != flt[1]:
                return False
            if flt[0] == "memcmp" and data[flt[1]:flt[1] + len(flt[2])] != flt[2]:
                return False
            if flt[0] == "token" and not tokens.is_token_account(acc):
                return False
        return True

    # --- accounts ---------------------------------------------------------------------------
    def rpc_getBalance(self, params):
        key = pubkey(param(params, 0))
        slot, at = self._view(config(params, 1))
        acc = self.node.account(key, at)
        return self._ctx(acc.lamports if acc else 0, slot)

    def rpc_getAccountInfo(self, params):
        key = pubkey(param(params, 0))
        cfg = config(params, 1)
        encoding, sliced = self._account_cfg(cfg, "binary")
        slot, at = self._view(cfg)
        return self._ctx(self._encode(key, self.node.account(key, at), encoding, sliced, at), slot)

    def rpc_getMultipleAccounts(self, params):
        keys = param(params, 0, [])
        if not isinstance(keys, list):
            raise bad("expected an array of pubkeys")
        if len(keys) > MAX_MULTIPLE_ACCOUNTS:
            raise _invalid(f"Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}")
        keys = [pubkey(k) for k in keys]
        cfg = config(params, 1)
        encoding, sliced = self._account_cfg(cfg, "base64")
        slot, at = self._view(cfg)
        return self._ctx([self._encode(k, self.node.account(k, at), encoding, sliced, at) for k in keys], slot)

    def rpc_getProgramAccounts(self, params):
        program = pubkey(param(params, 0))
        cfg = config(params, 1)
        filters = self._check_filters(cfg.get("filters") or [])
        encoding, sliced = self._account_cfg(cfg, "binary")
        slot, at = self._view(cfg)
        items = []
        for key, acc in self._owned_by(program, at):
            if not self._matches(acc, filters):
                continue
            encoded = self._encode(Pubkey.from_string(key), acc, encoding, sliced, at)
            # jsonParsed of a token program lists only the accounts that parse, as the reference
            if encoding == "jsonParsed" and program in tokens.TOKEN_PROGRAMS and not isinstance(encoded["data"], dict):
                continue
            items.append({"pubkey": key, "account": encoded})
        return self._ctx(items, slot) if cfg.get("withContext") else items

    # --- tokens -----------------------------------------------------------------------------
    def _mint_program(self, mint: Pubkey, at) -> Pubkey:
        if mint == NATIVE_MINT:
            return tokens.TOKEN_PROGRAM
        acc = self.node.account(mint, at)
        if acc is None:
            raise _invalid("Invalid param: could not find mint")
        if acc.owner not in tokens.TOKEN_PROGRAMS:
            raise _invalid("Invalid param: not a Token mint")
        return acc.owner

    def rpc_getTokenAccountBalance(self, params):
        key = pubkey(param(params, 0))
        slot, at = self._view(config(params, 1))
        acc = self.node.account(key, at)
        if acc is None:
            raise _invalid("Invalid param: could not find account")
        if not tokens.is_token_account(acc):
            raise _invalid("Invalid param: not a Token account")
        decimals = mint_decimals(Pubkey(bytes(acc.data[0:32])), self._getter(at))
        if decimals is None:
            raise _invalid("Invalid param: could not find mint")
        return self._ctx(tokens.ui_amount(tokens.u64(acc.data, 64), decimals), slot)

    def rpc_getTokenSupply(self, params):
        key = pubkey(param(params, 0))
        slot, at = self._view(config(params, 1))
        acc = self.node.account(key, at)
        if acc is None:
            raise _invalid("Invalid param: could not find account")
        if acc.owner not in tokens.TOKEN_PROGRAMS:
            raise _invalid("Invalid param: not a Token mint")
        if not tokens.is_mint(acc):
            raise _invalid("Invalid param: mint could not be unpacked")
        return self._ctx(tokens.ui_amount(tokens.u64(acc.data, 36), tokens.mint_decimals(acc)), slot)

    def _token_accounts(self, params, offset: int, coption: bool):
        """getTokenAccountsByOwner (owner at 32) and ...ByDelegate (COption at 72)."""
        wanted = bytes(pubkey(param(params, 0)))
        selector = param(params, 1)
        if not isinstance(selector, dict) or len({"mint", "programId"} & set(selector)) != 1:
            raise bad("expected {mint} or {programId}")
        cfg = config(params, 2)
        encoding, sliced = self._account_cfg(cfg, "binary")
        slot, at = self._view(cfg)
        if "mint" in selector:
            mint = pubkey(selector["mint"])
            program, wanted_mint = self._mint_program(mint, at), bytes(mint)
        else:
            program = pubkey(selector["programId"])
            if program not in tokens.TOKEN_PROGRAMS:
                raise _invalid("Invalid param: unrecognized Token program id")
            wanted_mint = None
        items = []
        for key, acc in self._owned_by(program, at):
            data = bytes(acc.data)
            if not tokens.is_token_account(acc) or (wanted_mint is not None and data[0:32] != wanted_mint):
                continue
            if coption:
                if data[72:76] == bytes(4) or data[76:108] != wanted:
                    continue
            elif data[offset:offset + 32] != wanted:
                continue
            encoded = self._encode(Pubkey.from_string(key), acc, encoding, sliced, at)
            if encoding == "jsonParsed" and not isinstance(encoded["data"], dict):
                continue
            items.append({"pubkey": key, "account": encoded})
        return self._ctx(items, slot)

    def rpc_getTokenAccountsByOwner(self, params):
        return self._token_accounts(params, 32, coption=False)

    def rpc_getTokenAccountsByDelegate(self, params):
        return self._token_accounts(params, 72, coption=True)

    def rpc_getTokenLargestAccounts(self, params):
        mint = pubkey(param(params, 0))
        slot, at = self._view(config(params, 1))
        program = self._mint_program(mint, at)
        decimals = mint_decimals(mint, self._getter(at))
        if decimals is None:
            raise _invalid("Invalid param: mint could not be unpacked")
        holders = [(tokens.u64(acc.data, 64), key) for key, acc in self._owned_by(program, at) if tokens.is_token_account(acc) and bytes(acc.data[0:32]) == bytes(mint)]
        holders.sort(key=lambda item: (-item[0], item[1]))
        return self._ctx([{"address": key, **tokens.ui_amount(amount, decimals)} for amount, key in holders[:NUM_LARGEST_ACCOUNTS]], slot)

    # --- supply -----------------------------------------------------------------------------
    def _lamports_at(self, at) -> tuple[int, dict[str, int]]:
        """(total lamports, {key: lamports at ``at``} for the accounts written since)."""
        total = self.node.store.lamports_total()
        changed: dict[str, int] = {}
        if at is not None:
            for key in self.node.written_after(at):
                now, then = self.node.account(Pubkey.from_string(key)), self.node.account(Pubkey.from_string(key), at)
                changed[key] = then.lamports if then else 0
                total += changed[key] - (now.lamports if now else 0)
        return total, changed

    def _runtime_balances(self) -> dict[str, int]:
        """Lamports of the accounts the runtime holds and the store does not (builtins,
        precompiles, sysvars, the default programs): Agave counts every account."""
        balances = {}
        for key in genesis.RUNTIME_KEYS:
            acc = self.node.account(key)
            if acc is not None:
                balances[str(key)] = acc.lamports
        return balances

    def rpc_getSupply(self, params):
        cfg = config(params, 0)
        slot, at = self._view(cfg, check_min=False)
        total, _ = self._lamports_at(at)
        total += sum(self._runtime_balances().values())
        faucet = self.node.account(self.node.faucet.pubkey(), at)
        reserved = faucet.lamports if faucet else 0
        listed = [] if cfg.get("excludeNonCirculatingAccountsList") else [str(self.node.faucet.pubkey())]
        return self._ctx({"total": total, "circulating": total - reserved, "nonCirculating": reserved, "nonCirculatingAccounts": listed}, slot)

    def rpc_getLargestAccounts(self, params):
        cfg = config(params, 0)
        kind = cfg.get("filter")
        if kind not in (None, "circulating", "nonCirculating"):
            raise bad(f"unknown variant `{kind}`, expected `circulating` or `nonCirculating`")
        slot, at = self._view(cfg, check_min=False)
        faucet = str(self.node.faucet.pubkey())
        _, changed = self._lamports_at(at)
        only = (faucet,) if kind == "nonCirculating" else ()
        exclude = (faucet,) if kind == "circulating" else ()
        balances = dict(self.node.store.largest_accounts(NUM_LARGEST_ACCOUNTS + len(changed), exclude=exclude, only=only))
        for key, lamports in changed.items():
            if (not only or key in only) and key not in exclude:
                balances[key] = lamports
        if not only:  # programs and sysvars are circulating, as every account but the faucet
            balances.update(self._runtime_balances())
        ranked = sorted(((lamports, key) for key, lamports in balances.items() if lamports > 0), key=lambda item: (-item[0], item[1]))
        return self._ctx([{"address": key, "lamports": lamports} for lamports, key in ranked[:NUM_LARGEST_ACCOUNTS]], slot)
