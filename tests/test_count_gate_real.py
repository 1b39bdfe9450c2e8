"""pytest --fastprof-counts on a real project's test suite: toolz's, from its
sdist (requirements-gate.txt; scripts/venv.sh downloads it into
.venv/py3.12/sdists/, or point FASTPROF_GATE_SDISTS at a directory holding it).

A baseline, five unchanged reruns without an alarm, then a one-line
regression (toolz's helper ``getter`` called twice by ``pluck``) caught,
naming ``getter`` and exactly the tests whose baseline has pluck calling it.
"""

import glob
import os
import re
import sys
import tarfile
import time

import pytest

from helpers import USING_CPROFILE, run_python, subprocess_env

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof's pytest mode")

SDIST = "toolz-*.tar.gz"
RERUNS = 5


def _sdist():
    where = os.environ.get("FASTPROF_GATE_SDISTS") or os.path.join(sys.prefix, "sdists")
    found = sorted(glob.glob(os.path.join(where, SDIST)))
    if not found:
        pytest.skip("no toolz sdist in %s (requirements-gate.txt; scripts/venv.sh fetches "
                    "it for one Python version)" % where)
    return found[-1]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    top = tmp_path_factory.mktemp("toolz")
    with tarfile.open(_sdist()) as tar:
        names = tar.getnames()
        if hasattr(tarfile, "data_filter"):
            tar.extractall(str(top), filter="data")
        else:
            tar.extractall(str(top))  # our own pinned download
    root = top / names[0].split("/")[0]
    (root / "pytest.ini").write_text("[pytest]\n")  # its setup.cfg asks for nothing we need
    return root


def _pytest(root, *args):
    env = subprocess_env(PYTEST_ADDOPTS="", PYTHONPATH=os.pathsep.join(
        [str(root), subprocess_env()["PYTHONPATH"]]))
    start = time.perf_counter()
    r = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-p", "fastprof.modes.pytest_plugin",
                    "-q", "toolz/tests"] + list(args), cwd=str(root), env=env, timeout=600)
    return r, time.perf_counter() - start


def _sections(path):
    """{test name: set of entries} of a baseline file."""
    out, test = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("["):
            test = line[1:-1]
            out[test] = set()
        elif line and not line.startswith("#"):
            out[test].add(line.split(" ", 1)[1])
    return out


def test_baseline_reruns_and_a_regression(project, tmp_path):
    base = tmp_path / "counts"
    r, plain = _pytest(project)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    r, gated = _pytest(project, "--fastprof-counts", str(base))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    ran = int(re.search(r"(\d+) passed", r.stdout).group(1))
    assert "%d tests had no baseline" % ran in r.stdout
    version = "py%d.%d" % sys.version_info[:2]
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.counts"))
    assert files and all(f.startswith(version + "/toolz/tests/test_") for f in files), files
    print("toolz suite: %.2fs plain, %.2fs with --fastprof-counts (recording)" % (plain, gated))

    for _ in range(RERUNS):
        r, _t = _pytest(project, "--fastprof-counts", str(base))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr
        assert "%d tests compared with" % ran in r.stdout
        assert "no call count changed" in r.stdout

    # the regression: one line, pluck calls its helper getter twice
    source = project / "toolz" / "itertoolz.py"
    text = source.read_text()
    line = "        get = getter(ind)\n"
    assert text.count(line) == 1
    source.write_text(text.replace(line, "        getter(ind)\n" + line))
    expected = set()
    for f in base.rglob("*.counts"):
        module = f.relative_to(base / version).as_posix()[:-len(".counts")]
        for test, entries in _sections(f).items():
            if "toolz/itertoolz.py:pluck -> toolz/itertoolz.py:getter" in entries:
                expected.add("%s::%s" % (module, test))
    assert expected
    r, _t = _pytest(project, "--fastprof-counts", str(base))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert " passed" in r.stdout and " failed" not in r.stdout  # the tests pass: the gate fails
    summary = r.stdout.split("fastprof call counts", 1)[1]
    flagged = set(re.findall(r"^(\S+::\S+): \d+ counts? changed$", summary, re.M))
    assert flagged == expected, (flagged ^ expected, summary)
    for test in flagged:
        block = summary.split(test + ":", 1)[1].split("\n")[1:]
        entries = []
        for entry in block:
            if not entry.startswith("    "):
                break
            entries.append(entry)
        # biggest change first: getter's, or that of a builtin getter calls more often
        assert any(e.endswith("toolz/itertoolz.py:getter") for e in entries), block[:12]
        for entry in entries:
            # getter's own calls, the edge into it, and what it calls
            assert "toolz/itertoolz.py:getter" in entry or "~:" in entry, entry
    # the baseline is untouched by a failing comparison
    r, _t = _pytest(project, "--fastprof-counts", str(base))
    assert r.returncode == 1
