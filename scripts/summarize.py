"""Print the closing summary of `make test` (called by scripts/run-tests.sh).

Arguments: TOTAL_SECONDS then one "STAGE STATUS SECONDS" string per stage.
Test counts come from the pytest JUnit reports in build/reports/ and from
the cmocka lines in build/logs/test-c.log. The last line reads
"summary: N passed, N failed, N skipped": failed counts failed tests, plus
each failed or not-run stage that reported no failed test of its own (a
build error, a crash). Failed tests are named just above that line, as
CI logs are often read from the tail. Exit status 1 if any stage failed or
did not run.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

MAX_FAILURES_NAMED = 10


def pytest_counts(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    c = {"tests": 0, "failed": 0, "skipped": 0}
    for s in suites:
        c["tests"] += int(s.get("tests", 0))
        c["failed"] += int(s.get("failures", 0)) + int(s.get("errors", 0))
        c["skipped"] += int(s.get("skipped", 0))
    c["passed"] = c["tests"] - c["failed"] - c["skipped"]
    c["failures"] = []
    for case in root.iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            first = (bad.get("message") or "").strip().splitlines()[:1]
            c["failures"].append("%s::%s  %s" % (case.get("classname", ""), case.get("name", ""),
                                                 first[0][:100] if first else ""))
    return c


def cmocka_counts(path):
    c = {"passed": 0, "failed": 0, "skipped": 0}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return c
    for key, word in (("passed", "PASSED"), ("failed", "FAILED"), ("skipped", "SKIPPED")):
        for m in re.finditer(r"^\[\s*%s\s*\] (\d+) test" % word, text, re.M):
            c[key] += int(m.group(1))
    return c


def fmt_time(s):
    return "%dm%02ds" % divmod(int(s), 60)


def main(argv):
    total = int(argv[1])
    stages = [a.split() for a in argv[2:]]
    per_stage = {}
    details = {}
    failures = []

    c = cmocka_counts("build/logs/test-c.log")
    per_stage["test-c"] = c
    details["test-c"] = "%(passed)d passed, %(failed)d failed (plain + valgrind + asan runs)" % c

    for stage, pattern in (("test-py", "pytest-py*[0-9].xml"), ("test-asan", "pytest-py*-asan.xml")):
        agg = {"passed": 0, "failed": 0, "skipped": 0}
        parts = []
        for path in sorted(glob.glob(os.path.join("build/reports", pattern)),
                           key=lambda p: [int(x) for x in re.findall(r"\d+", os.path.basename(p))]):
            pc = pytest_counts(path)
            name = re.sub(r"^pytest-py|-asan|\.xml$", "", os.path.basename(path))
            if pc is None:
                parts.append("%s: no report" % name)
                continue
            for k in agg:
                agg[k] += pc[k]
            failures += ["%s %s: %s" % (stage, name, f) for f in pc["failures"]]
            parts.append("%s: %d/%d/%d" % (name, pc["passed"], pc["failed"], pc["skipped"]))
        per_stage[stage] = agg
        details[stage] = ("passed/failed/skipped  " + "  ".join(parts)) if parts else "no pytest report"

    passed = failed = skipped = 0
    bad = False
    print()
    print("==================== make test summary ====================")
    for stage, status, secs in stages:
        c = per_stage.get(stage)
        if c:
            passed += c["passed"]
            failed += c["failed"]
            skipped += c["skipped"]
        if status in ("FAILED", "not-run"):
            bad = True
            if not c or c["failed"] == 0:
                failed += 1
        line = "  %-12s %-8s %7s" % (stage, status, fmt_time(int(secs)))
        if stage in details and status != "not-run":
            line += "   " + details[stage]
        print(line)
    print("  total        %-8s %7s" % ("FAILED" if bad else "ok", fmt_time(total)))
    print("  logs: build/logs/, pytest reports: build/reports/")
    # Named here, at the end, because a CI log is often read from its tail.
    for line in failures[:MAX_FAILURES_NAMED]:
        print("  failed: " + line)
    if len(failures) > MAX_FAILURES_NAMED:
        print("  failed: ... and %d more (see build/reports/)" % (len(failures) - MAX_FAILURES_NAMED))
    print("===========================================================")
    print("summary: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
