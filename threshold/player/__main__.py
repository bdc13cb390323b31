"""``python -m threshold.player``: the external FROST player's command line.

Messages are JSON files (or ``-`` for standard input); every command prints its JSON answer
on standard output (or writes ``--out``). An input file may hold one message or a JSON
array of them. Errors print one JSON object on standard error —
{"error": CODE, "message": ..., "culprit": N?, "field": ...?} — and exit with status 1
(2 for a usage error). docs/threshold-signing.md shows a whole session.

The store is ``--store`` (or $FROST_PLAYER_STORE, default ~/.frost-player); the passphrase
comes from ``--passphrase-file`` (or $FROST_PLAYER_PASSPHRASE_FILE), else
$FROST_PLAYER_PASSPHRASE, else a prompt on the terminal.

``api-dkg`` and ``api-sign`` talk to the service (``--api-url`` / $FROST_PLAYER_API_URL, the
API key from ``--api-key-file`` / $FROST_PLAYER_API_KEY_FILE / $FROST_PLAYER_API_KEY):
a whole key generation, or a signing session whose Solana message is decoded, checked and
shown before anything is signed (remote.py, solana_message.py).
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import os
import sys
from pathlib import Path

from .. import dkg, frost, messages
from . import operations as ops
from . import remote, solana_message
from .store import DEFAULT_LOG_N, Store, StoreError, WrongPassphrase, write_atomic


def _passphrase(args, *, confirm: bool = False) -> str:
    path = args.passphrase_file or os.environ.get("FROST_PLAYER_PASSPHRASE_FILE")
    if path:
        return Path(path).read_text().rstrip("\r\n")
    if os.environ.get("FROST_PLAYER_PASSPHRASE"):
        return os.environ["FROST_PLAYER_PASSPHRASE"]
    if not sys.stdin.isatty():
        raise StoreError("no passphrase: use --passphrase-file, FROST_PLAYER_PASSPHRASE_FILE or FROST_PLAYER_PASSPHRASE")
    first = getpass.getpass("Store passphrase: ")
    if confirm and getpass.getpass("Again: ") != first:
        raise StoreError("the passphrases differ")
    return first


def _store(args) -> Store:
    return Store.open(args.store, _passphrase(args))


def _read_messages(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise messages.MessageError(f"{path} is not JSON ({exc})")
        out.extend(value if isinstance(value, list) else [value])
    return out


def _read_one(path: str) -> dict:
    items = _read_messages([path])
    if len(items) != 1:
        raise messages.MessageError(f"{path} must hold exactly one message")
    return items[0]


def _participants(text: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("participants are identifiers separated by commas, e.g. 1,2,3")


def _message_bytes(args) -> bytes:
    if args.message_file:
        return Path(args.message_file).read_bytes()
    try:
        return base64.b64decode(args.message_base64, validate=True)
    except ValueError:
        raise messages.MessageError("--message-base64 is not base64")


# --- commands -----------------------------------------------------------------------------------


def cmd_init(args):
    Store.create(args.store, _passphrase(args, confirm=True), log_n=args.scrypt_log_n)
    return {"store": str(Path(args.store).resolve()), "created": True}


def cmd_keys(args):
    return ops.keys_list(_store(args))


def cmd_public_key(args):
    return ops.public_key_package(_store(args), args.key)


def cmd_dkg_round1(args):
    return ops.dkg_round1(_store(args), session_id=args.session, identifier=args.identifier, threshold=args.threshold, participants=args.participants)


def cmd_refresh_round1(args):
    return ops.refresh_round1(_store(args), key_name=args.key, session_id=args.session, participants=args.participants)


def cmd_round2(args):
    return ops.round2(_store(args), session_id=args.session, round1_messages=_read_messages(args.inputs))


def cmd_dkg_finish(args):
    return ops.dkg_finish(_store(args), session_id=args.session, key_name=args.key, round2_messages=_read_messages(args.inputs))


def cmd_refresh_finish(args):
    return ops.refresh_finish(_store(args), session_id=args.session, key_name=args.key, round2_messages=_read_messages(args.inputs))


def cmd_complain(args):
    return ops.complaint(_store(args), session_id=args.session, round2_message=_read_one(args.input))


def cmd_complaint_check(args):
    return ops.complaint_check(_read_one(args.complaint), _read_messages(args.round1))


def cmd_abandon(args):
    ops.abandon(_store(args), session_id=args.session)
    return {"sessionId": args.session, "abandoned": True}


def cmd_commit(args):
    return ops.commit(_store(args), key_name=args.key, session_id=args.session)


def cmd_sign(args):
    return ops.sign(_store(args), key_name=args.key, signing_package=_read_one(args.input))


def cmd_package(args):
    return ops.signing_package(public_key_package=_read_one(args.public_key_package), session_id=args.session,
                               message=_message_bytes(args), commitments=_read_messages(args.inputs))


def cmd_aggregate(args):
    return ops.aggregate(public_key_package=_read_one(args.public_key_package), signing_package=_read_one(args.package),
                         shares=_read_messages(args.inputs))


# --- over the service's API (remote.py) ---------------------------------------------------------


def _api(args) -> remote.Api:
    key = ""
    path = args.api_key_file or os.environ.get("FROST_PLAYER_API_KEY_FILE")
    if path:
        key = Path(path).read_text().strip()
    key = key or os.environ.get("FROST_PLAYER_API_KEY", "")
    return remote.Api(args.api_url or os.environ.get("FROST_PLAYER_API_URL", ""), key, cluster=args.cluster)


def _log(args):
    return (lambda text: sys.stderr.write(text + "\n")) if not args.quiet else (lambda text: None)


def cmd_api_dkg(args):
    return remote.keygen(_store(args), _api(args), session_id=args.session, code=args.player, key_name=args.key, timeout=args.timeout, log=_log(args))


def _confirm(args):
    def confirm(description: str) -> bool:
        sys.stderr.write("About to sign:\n" + description + "\n")
        if args.yes:
            return True
        if not sys.stdin.isatty():
            raise StoreError("no terminal to confirm on: review the message and run again with --yes")
        return input("Sign it? [y/N] ").strip().lower() in ("y", "yes")

    return confirm


def cmd_api_sign(args):
    return remote.sign(_store(args), _api(args), session_id=args.session, code=args.player, key_name=args.key, confirm=_confirm(args),
                       timeout=args.timeout, log=_log(args))


def cmd_describe(args):
    package = _read_one(args.input)
    message = solana_message.decode(base64.b64decode(package["message"]) if isinstance(package, dict) and "message" in package else b"")
    return {"description": solana_message.describe(message).splitlines(), "signers": message.signers, "feePayer": message.fee_payer}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m threshold.player", description="External FROST(Ed25519, SHA-512) player.")
    parser.add_argument("--store", default=os.environ.get("FROST_PLAYER_STORE", str(Path.home() / ".frost-player")), help="store directory")
    parser.add_argument("--passphrase-file", help="file whose first line is the store passphrase")
    parser.add_argument("--out", help="write the answer to this file instead of standard output")
    parser.add_argument("--api-url", help="the service's base URL for api-* commands (or $FROST_PLAYER_API_URL)")
    parser.add_argument("--api-key-file", help="file holding the API key (or $FROST_PLAYER_API_KEY_FILE, $FROST_PLAYER_API_KEY)")
    parser.add_argument("--cluster", help="svmCluster of api-* calls (default: the service's)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, func, help_):
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        return p

    p = command("init", cmd_init, "create an encrypted store")
    p.add_argument("--scrypt-log-n", type=int, default=DEFAULT_LOG_N, help=f"scrypt cost as log2 N (default {DEFAULT_LOG_N})")
    command("keys", cmd_keys, "list the key shares held")
    p = command("public-key", cmd_public_key, "print a key's public key package")
    p.add_argument("key")

    p = command("dkg-round1", cmd_dkg_round1, "key generation round 1: print this player's round-1 package")
    p.add_argument("--session", required=True)
    p.add_argument("--identifier", type=int, required=True)
    p.add_argument("--threshold", type=int, required=True)
    p.add_argument("--participants", type=_participants, required=True, help="e.g. 1,2,3")
    for name, kind in (("dkg-round2", "key generation"), ("refresh-round2", "refresh")):
        p = command(name, cmd_round2, f"{kind} round 2: check the round-1 packages, print the encrypted shares")
        p.add_argument("--session", required=True)
        p.add_argument("inputs", nargs="+", help="round-1 packages (files, or - for standard input)")
    p = command("dkg-finish", cmd_dkg_finish, "key generation end: check the shares received, store the key")
    p.add_argument("--session", required=True)
    p.add_argument("--key", required=True, help="name to store the key share under")
    p.add_argument("inputs", nargs="+", help="round-2 packages (those for other players are skipped)")
    p = command("refresh-round1", cmd_refresh_round1, "refresh round 1 for a stored key")
    p.add_argument("--key", required=True)
    p.add_argument("--session", required=True)
    p.add_argument("--participants", type=_participants, required=True)
    p = command("refresh-finish", cmd_refresh_finish, "refresh end: replace the key share, same group key")
    p.add_argument("--session", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("inputs", nargs="+")
    p = command("complain", cmd_complain, "a verifiable complaint about a received share")
    p.add_argument("--session", required=True)
    p.add_argument("input", help="the round-2 package complained about")
    p = command("complaint-check", cmd_complaint_check, "decide a complaint: print the participant at fault")
    p.add_argument("--complaint", required=True, help="the complaint")
    p.add_argument("round1", nargs="+", help="every round-1 package of the session")
    p = command("abandon", cmd_abandon, "drop an aborted key-generation or refresh session's state")
    p.add_argument("--session", required=True)

    p = command("commit", cmd_commit, "signing round one: print this player's commitment")
    p.add_argument("--key", required=True)
    p.add_argument("--session", required=True)
    p = command("sign", cmd_sign, "signing round two: print this player's signature share")
    p.add_argument("--key", required=True)
    p.add_argument("input", help="the signing package")
    p = command("package", cmd_package, "coordinator: the signing package from the commitments")
    p.add_argument("--public-key-package", required=True)
    p.add_argument("--session", required=True)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--message-base64")
    group.add_argument("--message-file")
    p.add_argument("inputs", nargs="+", help="signing commitments")
    p = command("aggregate", cmd_aggregate, "coordinator: verify the shares and print the signature")
    p.add_argument("--public-key-package", required=True)
    p.add_argument("--package", required=True)
    p.add_argument("inputs", nargs="+", help="signature shares")

    p = command("api-dkg", cmd_api_dkg, "over the API: take part in a key generation or refresh session until it completes")
    p.add_argument("--session", required=True, help="the sessionId (Create Account's dkgSession, or Refresh DKG Shares)")
    p.add_argument("--player", required=True, help="this player's mpcPlayerCode")
    p.add_argument("--key", required=True, help="name of the key in the store (refresh: the key refreshed)")
    p.add_argument("--timeout", type=float, default=600.0)
    p = command("api-sign", cmd_api_sign, "over the API: commit, show the Solana message, sign and send the partial signature (Sign Transaction)")
    p.add_argument("--session", required=True, help="the signing session's sessionId")
    p.add_argument("--player", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--yes", action="store_true", help="sign without asking (the message is still shown and checked)")
    p.add_argument("--timeout", type=float, default=600.0)
    p = command("describe", cmd_describe, "decode the Solana message of a signing package")
    p.add_argument("input", help="the signing package")
    return parser


def _fail(code: str, exc: Exception, **extra) -> int:
    sys.stderr.write(json.dumps({"error": code, "message": str(exc), **extra}) + "\n")
    return 1


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except frost.InvalidSignatureShare as exc:
        return _fail("INVALID_SIGNATURE_SHARE", exc, culprits=list(exc.culprits))
    except dkg.DkgError as exc:
        return _fail("DKG_ABORTED", exc, culprit=exc.culprit)
    except messages.MessageError as exc:
        return _fail("INVALID_MESSAGE", exc, field=exc.field)
    except remote.ApiError as exc:
        return _fail("API_ERROR", exc, status=exc.status, errors=exc.errors)
    except remote.SessionFailed as exc:
        return _fail("SESSION_FAILED", exc, culprit=exc.culprit)
    except remote.WaitTimedOut as exc:
        return _fail("TIMED_OUT", exc)
    except solana_message.MessageDecodeError as exc:
        return _fail("REFUSED_MESSAGE", exc)
    except ops.NonceReuse as exc:
        return _fail("NONCE_ALREADY_USED", exc)
    except WrongPassphrase as exc:
        return _fail("WRONG_PASSPHRASE", exc)
    except (StoreError, OSError) as exc:
        return _fail("STORE_ERROR", exc)
    except frost.FrostError as exc:
        return _fail("INVALID_INPUT", exc)
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        write_atomic(Path(args.out), text.encode())
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
