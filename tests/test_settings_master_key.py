"""Production settings never make up a master key (issue 9, item 12): without
LEDGER_MASTER_KEY or an existing key file, and outside the embedded mode, the process
refuses to start with a clear message, and no key file appears."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOAD_SETTINGS = "import django; django.setup(); from django.conf import settings; print('ok', settings.LEDGER_EMBEDDED)"


def _start(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    """Load the settings in a process with a clean environment (plus ``extra``)."""
    env = {"PATH": os.environ.get("PATH", ""), "DJANGO_SETTINGS_MODULE": "ledger_project.settings", "LEDGER_VAR_DIR": str(tmp_path / "var"), **extra}
    return subprocess.run([sys.executable, "-c", LOAD_SETTINGS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_production_start_without_a_master_key_fails_clearly(tmp_path):
    result = _start(tmp_path, DJANGO_DEBUG="false", DJANGO_SECRET_KEY="s" * 50)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "LEDGER_MASTER_KEY" in result.stderr and "LEDGER_EMBEDDED" in result.stderr
    assert not (tmp_path / "var" / "master.key").exists()


def test_production_start_with_a_named_key_file_that_is_missing_fails(tmp_path):
    result = _start(tmp_path, LEDGER_MASTER_KEY_FILE=str(tmp_path / "mounted" / "master.key"), DJANGO_SECRET_KEY="s" * 50)
    assert result.returncode != 0 and "does not exist" in result.stderr
    assert not (tmp_path / "mounted").exists()


def test_production_start_without_a_django_secret_key_fails_clearly(tmp_path):
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    result = _start(tmp_path, LEDGER_MASTER_KEY=key)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY" in result.stderr
    assert not (tmp_path / "var" / "django_secret_key").exists()


def test_a_given_key_or_an_existing_key_file_or_embedded_mode_starts(tmp_path):
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    assert _start(tmp_path, LEDGER_MASTER_KEY=key, DJANGO_SECRET_KEY="s" * 50).stdout.strip() == "ok False"
    key_file = tmp_path / "master.key"
    key_file.write_text(key + "\n")
    assert _start(tmp_path, LEDGER_MASTER_KEY_FILE=str(key_file), DJANGO_SECRET_KEY="s" * 50).stdout.strip() == "ok False"
    assert _start(tmp_path, LEDGER_EMBEDDED="1").stdout.strip() == "ok True"


def test_an_embedded_start_makes_the_key_file_so_commands_outside_embedded_mode_find_it(tmp_path):
    """README, "Getting an API key": after `make run` started (its first command is an
    embedded `manage.py migrate`), `manage.py create_api_key` from another terminal, not in
    embedded mode, starts: the key file was made when the embedded process started, not
    when something first sealed a key."""
    assert _start(tmp_path, LEDGER_EMBEDDED="1").stdout.strip() == "ok True"
    key_file = tmp_path / "var" / "master.key"
    assert key_file.is_file() and key_file.stat().st_mode & 0o777 == 0o600
    key = key_file.read_text()
    assert len(base64.urlsafe_b64decode(key.strip())) == 32
    second_terminal = _start(tmp_path)
    assert second_terminal.stdout.strip() == "ok False", second_terminal.stderr[-2000:]
    assert _start(tmp_path, LEDGER_EMBEDDED="1").stdout.strip() == "ok True" and key_file.read_text() == key  # never made twice
