"""The closing line of .ci/run (scripts/ci_summary.py): the CI harness reads the last line,
so it must be "ci: N passed, N failed[, N skipped]" adding up the pytest runs and
schemathesis, with failures counted however a stage failed. The shell logic runs for real
with stand-ins for make/psql/pg_isready/redis-cli (the stages themselves are not run)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import ci_summary  # noqa: E402

SUMMARY_LINE = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$")

PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="{errors}" failures="{failures}" skipped="1" tests="{tests}" time="9.1">
  <testcase classname="tests.test_a" name="test_ok" time="0.1"/>
  <testcase classname="tests.test_a" name="test_ok_too" time="0.1"/>
  <testcase classname="tests.test_a" name="test_xfail" time="0.1"><skipped type="pytest.xfail" message="known"/></testcase>
  {extra}
</testsuite></testsuites>
"""


def pytest_junit(path: Path, *, failing: int = 0, erroring: int = 0, suite_errors: int = 0) -> Path:
    extra = "".join(f'<testcase classname="tests.test_b" name="test_fail_{i}"><failure message="assert 1 == 2">trace</failure></testcase>' for i in range(failing))
    extra += "".join(f'<testcase classname="tests.test_b" name="test_err_{i}"><error message="failed on teardown">trace</error></testcase>' for i in range(erroring))
    path.write_text(PYTEST_JUNIT.format(errors=erroring + suite_errors, failures=failing, tests=3 + failing + erroring, extra=extra))
    return path


def schemathesis_reports(directory: Path, *, failing_operations: int = 0, generated: int = 9120, with_failures: int = 0, without_checks: int = 14) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cases = [f'<testcase name="POST /api/v1/op{i}" time="1.0"/>' for i in range(21 - failing_operations)]
    cases += [f'<testcase name="PATCH /api/v1/bad{i}" time="1.0"><failure type="failure" message="Server error">500</failure></testcase>' for i in range(failing_operations)]
    (directory / "junit.xml").write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites errors="0" failures="{failing_operations}" skipped="0" tests="21">'
        f'<testsuite name="schemathesis" errors="0" failures="{failing_operations}" skipped="0" tests="21">{"".join(cases)}</testsuite></testsuites>'
    )
    (directory / "run.json").write_text(json.dumps({
        "exit_code": 1 if with_failures else 0,
        "test_cases": {"generated": generated, "with_failures": with_failures, "unique_failures": with_failures and 1, "without_checks": without_checks, "errored": 0},
        "warnings": {"missing_auth": [], "missing_test_data": ["PATCH /api/v1/x", "POST /api/v1/y"]},
    }))
    return directory


def run(tmp_path: Path, *, exit_code: int = 0, stage: str = "done") -> tuple[list[str], int]:
    return ci_summary.summarize(
        label="ci", exit_code=exit_code, stage=stage,
        pytest=[("make test", tmp_path / "test.xml"), ("make test-embedded", tmp_path / "test-embedded.xml")],
        schemathesis=[("make schemathesis", tmp_path / "schemathesis")],
    )


def test_all_green_adds_both_pytest_runs_and_schemathesis_operations(tmp_path):
    pytest_junit(tmp_path / "test.xml")
    pytest_junit(tmp_path / "test-embedded.xml")
    schemathesis_reports(tmp_path / "schemathesis")

    lines, code = run(tmp_path)

    assert code == 0
    assert lines[-1] == "ci: 25 passed, 0 failed, 2 skipped"
    assert SUMMARY_LINE.match(lines[-1])
    assert lines[0] == "make test: 2 passed, 0 failed, 1 skipped"
    assert lines[2] == ("make schemathesis: 21 operations: 21 passed, 0 failed; "
                        "test cases: 9120 generated, 9120 passed, 0 failed, 14 skipped; warnings: missing_test_data (2)")


def test_failures_and_errors_of_every_stage_are_counted(tmp_path):
    pytest_junit(tmp_path / "test.xml", failing=2, erroring=1)
    pytest_junit(tmp_path / "test-embedded.xml", failing=1)
    schemathesis_reports(tmp_path / "schemathesis", failing_operations=3, with_failures=40)

    lines, code = run(tmp_path, exit_code=2, stage="make test")

    # make test failed: the run stopped there, the later stages did not run.
    assert lines == ["make test: 2 passed, 3 failed, 1 skipped", "make test-embedded: not run", "make schemathesis: not run", "ci: 2 passed, 3 failed, 1 skipped"]
    assert code == 1


def test_schemathesis_failures_reach_the_total(tmp_path):
    pytest_junit(tmp_path / "test.xml")
    pytest_junit(tmp_path / "test-embedded.xml")
    schemathesis_reports(tmp_path / "schemathesis", failing_operations=3, with_failures=40)

    lines, code = run(tmp_path, exit_code=1, stage="make schemathesis")

    assert lines[-1] == "ci: 22 passed, 3 failed, 2 skipped"
    assert "test cases: 9120 generated, 9080 passed, 40 failed, 14 skipped" in lines[2]
    assert code == 1


def test_a_failing_stage_without_a_report_counts_as_one_failure(tmp_path):
    pytest_junit(tmp_path / "test.xml")

    lines, code = run(tmp_path, exit_code=2, stage="make test-embedded")

    assert lines[1].startswith("make test-embedded: no report at ") and lines[1].endswith("exited 2 (counted as 1 failed)")
    assert lines[-1] == "ci: 2 passed, 1 failed, 1 skipped"
    assert code == 1


def test_a_stage_that_exits_non_zero_with_a_clean_report_still_fails(tmp_path):
    # e.g. pytest's exit code 3 (internal error) after writing the report, or a warning
    # schemathesis is told to fail on
    pytest_junit(tmp_path / "test.xml")

    lines, code = run(tmp_path, exit_code=3, stage="make test")

    assert lines[0] == "make test: 2 passed, 0 failed, 1 skipped (exited 3; counted as 1 failed)"
    assert lines[-1] == "ci: 2 passed, 1 failed, 1 skipped"
    assert code == 1


def test_a_setup_failure_counts_and_nothing_ran(tmp_path):
    lines, code = run(tmp_path, exit_code=1, stage="setup")

    assert lines == ["setup: exited 1 (counted as 1 failed)", "make test: not run", "make test-embedded: not run", "make schemathesis: not run", "ci: 0 passed, 1 failed"]
    assert code == 1


def test_a_missing_report_after_a_green_run_is_a_failure(tmp_path):
    pytest_junit(tmp_path / "test.xml")
    pytest_junit(tmp_path / "test-embedded.xml")

    lines, code = run(tmp_path)

    assert lines[2].startswith("make schemathesis: no report at ")
    assert lines[-1] == "ci: 4 passed, 1 failed, 2 skipped"
    assert code == 1


def test_an_unreadable_report_is_a_failure_not_a_crash(tmp_path):
    (tmp_path / "test.xml").write_text("<testsuites><testsuite><testcase name=")  # cut off mid-write
    pytest_junit(tmp_path / "test-embedded.xml")
    schemathesis_reports(tmp_path / "schemathesis")

    lines, code = run(tmp_path)

    assert lines[0].startswith("make test: unreadable report ")
    assert lines[-1] == "ci: 23 passed, 1 failed, 1 skipped"
    assert code == 1


def test_suite_level_errors_outside_any_testcase_count(tmp_path):
    path = tmp_path / "test.xml"
    path.write_text('<testsuites><testsuite name="pytest" errors="2" failures="0" skipped="0" tests="1"><testcase classname="a" name="b"/></testsuite></testsuites>')

    assert ci_summary.junit_counts(path) == ci_summary.Counts(passed=1, failed=2)


def test_schemathesis_case_failures_without_a_failing_operation_still_fail(tmp_path):
    pytest_junit(tmp_path / "test.xml")
    pytest_junit(tmp_path / "test-embedded.xml")
    schemathesis_reports(tmp_path / "schemathesis", with_failures=2)

    lines, code = run(tmp_path, exit_code=1, stage="make schemathesis")

    assert lines[-1] == "ci: 25 passed, 1 failed, 2 skipped"
    assert code == 1


# --- .ci/run itself, with stand-ins for the commands it runs ------------------------------

FAKE_MAKE = r"""#!/usr/bin/env bash
# Stand-in for make: records the call, writes the report the real target would write.
target=$1; shift
echo "make $target" >> "$CALLS"
junit=""
for arg in "$@"; do
  case "$arg" in PYTEST_ARGS=--junitxml=*) junit="${arg#PYTEST_ARGS=--junitxml=}" ;; esac
done
fail=0; [ "${FAIL_TARGET:-}" = "$target" ] && fail=1
case "$target" in
  test|test-embedded)
    echo "===== 3 passed in 1.00s ====="
    if [ "$fail" = 1 ]; then
      printf '<testsuites><testsuite errors="0" failures="1" tests="3"><testcase name="a"/><testcase name="b"/><testcase name="c"><failure message="x"/></testcase></testsuite></testsuites>' > "$junit"
      exit 1
    fi
    printf '<testsuites><testsuite errors="0" failures="0" tests="3"><testcase name="a"/><testcase name="b"/><testcase name="c"/></testsuite></testsuites>' > "$junit" ;;
  schemathesis)
    mkdir -p "$SCHEMATHESIS_REPORT_DIR"
    printf '<testsuites><testsuite><testcase name="POST /x"/><testcase name="POST /y"/></testsuite></testsuites>' > "$SCHEMATHESIS_REPORT_DIR/junit.xml"
    printf '{"test_cases": {"generated": 50, "with_failures": 0, "without_checks": 0, "errored": 0}, "warnings": {}}' > "$SCHEMATHESIS_REPORT_DIR/run.json"
    echo "============================ 2 warnings in 90.16s ============================="
    exit "$fail" ;;
esac
"""


@pytest.fixture
def ci_tree(tmp_path):
    """A copy of .ci/run and scripts/ci_summary.py, with make, psql, pg_isready and
    redis-cli replaced by stand-ins on PATH."""
    tree = tmp_path / "repo"
    (tree / ".ci").mkdir(parents=True)
    (tree / "scripts").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tree / ".ci" / "run")
    shutil.copy(ROOT / "scripts" / "ci_summary.py", tree / "scripts" / "ci_summary.py")
    # The programs check (rebuild and compare) is a stage of its own, tested in programs/tests.
    (tree / "scripts" / "programs_check.py").write_text('import os\nopen(os.environ["CALLS"], "a").write("programs_check\\n")\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {"make": FAKE_MAKE, "psql": '#!/bin/sh\necho "psql $*" >> "$CALLS"\nexit "${PSQL_EXIT:-0}"\n', "pg_isready": "#!/bin/sh\nexit 0\n", "redis-cli": "#!/bin/sh\nexit 0\n",
             "python3": f"#!/bin/sh\nexec {sys.executable} \"$@\"\n", "clang": "#!/bin/sh\nexit 0\n"}
    for name, text in stubs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return tree, bin_dir, tmp_path / "calls"


def run_ci(ci_tree, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    tree, bin_dir, calls = ci_tree
    environ = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(tree), **env}
    proc = subprocess.run(["bash", str(tree / ".ci" / "run")], env=environ, capture_output=True, text=True, timeout=60)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_ci_run_ends_with_the_summary_line(ci_tree):
    proc, calls = run_ci(ci_tree)

    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.rstrip("\n").splitlines()[-1]
    assert last == "ci: 8 passed, 0 failed"
    assert SUMMARY_LINE.match(last)
    assert [c for c in calls if c.startswith("make")] == ["make browser", "make promtool", "make nginx", "make test", "make test-embedded", "make schemathesis"]
    assert calls.index("programs_check") < calls.index("make test")
    # the throwaway databases are dropped before the summary is printed
    assert any("DROP DATABASE IF EXISTS test_ledger_ci_" in c for c in calls)


@pytest.mark.parametrize(("target", "expected", "ran"), [
    ("test", "ci: 2 passed, 1 failed", ["make test"]),
    ("test-embedded", "ci: 5 passed, 1 failed", ["make test", "make test-embedded"]),
    ("schemathesis", "ci: 8 passed, 1 failed", ["make test", "make test-embedded", "make schemathesis"]),
])
def test_ci_run_stops_at_a_failing_stage_and_counts_it(ci_tree, target, expected, ran):
    proc, calls = run_ci(ci_tree, FAIL_TARGET=target)

    assert proc.returncode != 0
    assert proc.stdout.rstrip("\n").splitlines()[-1] == expected
    assert [c for c in calls if c.startswith("make")] == ["make browser", "make promtool", "make nginx", *ran]


def test_ci_run_setup_failure_still_summarises(ci_tree):
    proc, calls = run_ci(ci_tree, PSQL_EXIT="2")

    assert proc.returncode == 2
    lines = proc.stdout.rstrip("\n").splitlines()
    assert lines[-1] == "ci: 0 passed, 1 failed"
    assert "setup: exited 2 (counted as 1 failed)" in lines
    assert [c for c in calls if c.startswith("make")] == ["make browser", "make promtool", "make nginx"]


# --- scripts/schemathesis_run.py: its own closing lines ------------------------------------


def test_the_schemathesis_run_ends_with_its_own_count_not_a_decorated_closing_line(tmp_path):
    """schemathesis closes like pytest ("==== 3 warnings in 434.75s ===="), which the CI
    harness reads as a pytest run that ran no test. The run relays that line plainly, then
    prints the x-request-id share and, last, "schemathesis: N passed, N failed"."""
    sys.path.insert(0, str(ROOT))
    from scripts.schemathesis_run import closing_lines, undecorated

    for closing in ("==== 3 warnings in 434.75s ====\n", "\x1b[1m===== 21 passed, 2 warnings in 61.20s =====\x1b[0m\n"):
        assert not re.match(r"^(?:\x1b\[[0-9;]*m)*=+ .* =+", undecorated(closing)) and " in " in undecorated(closing)
    assert undecorated("===== SUMMARY =====\n") == "===== SUMMARY =====\n"  # a section header is left alone
    reports = schemathesis_reports(tmp_path / "reports")
    tally = tmp_path / "tally.json"
    tally.write_text(json.dumps({"cases": 200, "reached": 190, "requestIdReused": 4, "replayed": 6}))
    lines = closing_lines(0, reports, tally)
    assert lines[0].startswith("== x-request-id: 190 of 200 cases (95.0 %) reached")
    assert SUMMARY_LINE.match(lines[-1]) and lines[-1].startswith("schemathesis: ") and ", 0 failed" in lines[-1]
    failed = closing_lines(1, tmp_path / "missing", tmp_path / "none.json")
    assert failed[0] == "== x-request-id: no tally (the hooks wrote none)" and failed[-1].startswith("schemathesis: 0 passed, 1 failed")
