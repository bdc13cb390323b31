"""Two copies of the service on one host keep their own gunicorn control socket (issue:
"Two copies on one host share gunicorn's control socket"). gunicorn's default is one per
user (``$XDG_RUNTIME_DIR`` or ``~/.gunicorn/gunicorn.ctl``): a second copy replaced the
first's socket, and stopping it deleted it. gunicorn.conf.py puts it under the instance's
var dir."""

from __future__ import annotations

import socket

import pytest

from tests.workers import WebProcess, new_queue_name
from localnet.testing import free_port


def _answers(path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


@pytest.mark.django_db(transaction=True)
def test_two_copies_keep_their_own_control_socket_under_their_var_dir(tmp_path):
    home = tmp_path / "home"  # one user for both copies: gunicorn's default would be shared
    copies = []
    try:
        for name in ("a", "b"):
            var = tmp_path / name
            env = {"HOME": str(home), "XDG_RUNTIME_DIR": "", "LEDGER_VAR_DIR": str(var), "GUNICORN_WORKERS": "1", "GUNICORN_THREADS": "1"}
            web = WebProcess(new_queue_name(), free_port(), env, log_path=tmp_path / f"web-{name}.log")
            web.start()
            copies.append((web, var / "gunicorn.ctl"))
        for _, ctl in copies:
            assert ctl.exists() and _answers(ctl), ctl
        (first, first_ctl), (second, second_ctl) = copies
        second.stop()
        assert not second_ctl.exists()
        assert first_ctl.exists() and _answers(first_ctl)
        assert not (home / ".gunicorn" / "gunicorn.ctl").exists()
    finally:
        for web, _ in copies:
            web.stop()
