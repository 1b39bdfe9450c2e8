"""Sampled pstats files (Python 3.15's ``python -m profiling.sampling``).

Since 3.15 pstats loads a stats dict holding the key ``('__sampled__',)``
as sample counts (``SampledStats``). fastprof never writes that key, and
its tools, which read counts as calls, refuse such a file in one line with
exit status 2 instead of showing samples as calls.
"""
import marshal
import os
import subprocess
import sys

import pytest

import fastprof
from fastprof.data.profile_file import ProfileFileError, load_profile

ROW = ("work.py", 3, "crunch")


def write_sampled(path):
    """What profiling.sampling's pstats collector writes: sample counts
    and times per function, plus the marker."""
    stats = {
        ROW: (40, 40, 0.4, 0.5, {("work.py", 9, "main"): (40, 40, 0.4, 0.5)}),
        ("work.py", 9, "main"): (0, 50, 0.0, 0.5, {}),
        ("__sampled__",): True,
    }
    with open(path, "wb") as f:
        marshal.dump(stats, f)


def write_plain(path):
    with open(path, "wb") as f:
        marshal.dump({ROW: (1, 1, 0.1, 0.1, {})}, f)


def fastprof_cli(*args):
    return subprocess.run([sys.executable, "-c", "import sys, fastprof.cli as c; "
                           "sys.exit(c.main(sys.argv[1:]))"] + list(args),
                          capture_output=True, text=True, timeout=120)


def test_load_refuses_a_sampled_file(tmp_path):
    path = str(tmp_path / "sampled.prof")
    write_sampled(path)
    with pytest.raises(ProfileFileError, match="sampled profile"):
        load_profile(path)


@pytest.mark.parametrize("command", ["view", "diff", "diff-new", "merge", "convert"])
def test_tools_refuse_a_sampled_file_in_one_line(command, tmp_path):
    sampled, plain = str(tmp_path / "sampled.prof"), str(tmp_path / "plain.prof")
    write_sampled(sampled)
    write_plain(plain)
    out = str(tmp_path / "out.prof")
    args = {
        "view": ["view", sampled],
        "diff": ["diff", sampled, plain],
        "diff-new": ["diff", plain, sampled],
        "merge": ["merge", plain, sampled, "-o", out],
        "convert": ["convert", sampled, "-o", str(tmp_path / "out.collapsed")],
    }[command]
    proc = fastprof_cli(*args)
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sampled profile" in lines[0] and sampled in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(out) and not os.path.exists(str(tmp_path / "out.collapsed"))


def test_fastprof_never_writes_the_marker(tmp_path):
    prof = fastprof.Profile()
    prof.runcall(sorted, [3, 1, 2])
    path = str(tmp_path / "p.prof")
    prof.dump_stats(path)
    with open(path, "rb") as f:
        stats = marshal.load(f)
    assert ("__sampled__",) not in stats
    assert all(len(k) == 3 for k in stats)
    load_profile(path)  # and loads again
