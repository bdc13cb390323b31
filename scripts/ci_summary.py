"""The closing lines of `.ci/run`: what every stage ran, then one total line.

The CI harness judges a run by its last line, so it must be a plain count:

    make test: 1210 passed, 0 failed, 2 skipped
    make test-embedded: 1210 passed, 0 failed, 2 skipped
    make schemathesis: 21 operations: 21 passed, 0 failed; test cases: 9120 generated, 9120 passed, 0 failed, 14 skipped; warnings: none
    ci: 2441 passed, 0 failed, 4 skipped

The total adds up the JUnit reports: each pytest test once per run, and each schemathesis
operation as one test (failed when any of its generated test cases failed). Schemathesis's
generated test cases are counted on its own line (its JSON run report), not in the total.

A stage that failed (``--exit-code`` non-zero while ``--stage`` names it) counts as one
failed test when its report is missing or unreadable, or lists no failure (a crash, a
collection error outside any test, a setup step); stages after it are "not run". Any
other ``--stage`` (a setup step of .ci/run) that failed counts the same way. The exit
code is 1 when anything failed, else 0. Standard library only: it runs even when the
virtualenv could not be built.

    python3 scripts/ci_summary.py --label ci --exit-code 0 --stage done \\
        --pytest "make test=var/ci/reports/test.xml" \\
        --schemathesis "make schemathesis=var/ci/reports/schemathesis"
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    def __iadd__(self, other: "Counts") -> "Counts":
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        return self

    def text(self) -> str:
        out = f"{self.passed} passed, {self.failed} failed"
        return out + (f", {self.skipped} skipped" if self.skipped else "")


class ReportError(Exception):
    """A report that is missing or cannot be read."""


def junit_counts(path: Path) -> Counts:
    """Passed/failed/skipped of a JUnit XML file, counted per <testcase>: one with a
    <failure> or <error> failed (a pytest teardown error included), one with <skipped>
    (xfail included) skipped, any other passed."""
    if not path.is_file():
        raise ReportError(f"no report at {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ReportError(f"unreadable report {path}: {exc}") from None
    counts = Counts()
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            counts.failed += 1
        elif "skipped" in tags:
            counts.skipped += 1
        else:
            counts.passed += 1
    # Errors a suite reports outside any testcase (e.g. a crashed collection).
    for suite in root.iter("testsuite"):
        listed = sum(1 for case in suite.iter("testcase") for child in case if child.tag == "error")
        counts.failed += max(int(suite.get("errors") or 0) - listed, 0)
    return counts


@dataclass
class Schemathesis:
    operations: Counts
    cases: str = "test cases: no run report"
    warnings: list[str] = field(default_factory=list)
    failed_cases: int = 0


def schemathesis_report(directory: Path) -> Schemathesis:
    """``junit.xml`` (one testcase per operation) and ``run.json`` (schemathesis's JSON
    run report: generated test cases, failures, warnings) in ``directory``."""
    result = Schemathesis(junit_counts(directory / "junit.xml"))
    run = directory / "run.json"
    if run.is_file():
        try:
            data = json.loads(run.read_text(encoding="utf-8"))
            cases = data["test_cases"]
            generated, failed = int(cases["generated"]), int(cases["with_failures"]) + int(cases["errored"])
            skipped = int(cases["without_checks"])
            # As schemathesis's own "Test cases:" line counts them: skipped apart from generated.
            result.cases = f"test cases: {generated} generated, {generated - failed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")
            result.failed_cases = failed
            warnings = data.get("warnings") or {}  # {kind: [operation, ...]}
            result.warnings = sorted(f"{kind} ({len(labels)})" for kind, labels in warnings.items() if labels) if isinstance(warnings, dict) else sorted(map(str, warnings))
        except (ValueError, KeyError, TypeError) as exc:
            result.cases = f"test cases: unreadable run report ({exc.__class__.__name__})"
    return result


def _spec(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {value!r}")
    return name, Path(path)


def summarize(*, label: str, exit_code: int, stage: str, pytest: list[tuple[str, Path]], schemathesis: list[tuple[str, Path]]) -> tuple[list[str], int]:
    """The summary lines and the exit code (1 when anything failed).

    Stages run in the order given. When ``stage`` names one of them and ``exit_code`` is
    not 0, the stages before it completed (a missing report is a failure), it failed, and
    the ones after it did not run. Otherwise a missing report is a failure when the run
    succeeded, and "not run" when a setup step (``stage``) stopped it."""
    stages = [(name, path, "pytest") for name, path in pytest] + [(name, path, "schemathesis") for name, path in schemathesis]
    names = [name for name, _, _ in stages]
    failed_at = names.index(stage) if exit_code != 0 and stage in names else None
    lines: list[str] = []
    total = Counts()
    if exit_code != 0 and failed_at is None:
        total.failed += 1
        lines.append(f"{stage or 'setup'}: exited {exit_code} (counted as 1 failed)")
    for index, (name, path, kind) in enumerate(stages):
        if failed_at is not None and index > failed_at:
            lines.append(f"{name}: not run")
            continue
        failing = index == failed_at
        try:
            if kind == "pytest":
                counts = junit_counts(path)
                detail = counts.text()
            else:
                report = schemathesis_report(path)
                counts = report.operations
                operations = counts.passed + counts.failed + counts.skipped
                detail = f"{operations} operations: {counts.text()}; {report.cases}; warnings: {', '.join(report.warnings) or 'none'}"
                if report.failed_cases and not counts.failed:
                    counts.failed += 1  # a failure its JUnit report did not attribute to an operation
        except ReportError as exc:
            if exit_code != 0 and failed_at is None:
                lines.append(f"{name}: not run")
                continue
            counts = Counts(failed=1)
            detail = f"{exc}" + (f", exited {exit_code}" if failing else "") + " (counted as 1 failed)"
        else:
            if failing and not counts.failed:
                counts.failed += 1
                detail += f" (exited {exit_code}; counted as 1 failed)"
        total += counts
        lines.append(f"{name}: {detail}")
    lines.append(f"{label}: {total.text()}")
    return lines, 1 if total.failed or exit_code else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="ci", help="the word before the total's colon")
    parser.add_argument("--exit-code", type=int, default=0, help="the exit code of the step named by --stage")
    parser.add_argument("--stage", default="", help="the step that was running when .ci/run stopped")
    parser.add_argument("--pytest", type=_spec, action="append", default=[], metavar="NAME=JUNIT_XML")
    parser.add_argument("--schemathesis", type=_spec, action="append", default=[], metavar="NAME=REPORT_DIR")
    args = parser.parse_args(argv)
    lines, code = summarize(label=args.label, exit_code=args.exit_code, stage=args.stage, pytest=args.pytest, schemathesis=args.schemathesis)
    print("\n".join(lines), flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
