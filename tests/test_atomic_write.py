"""Profiles and exports are written whole or not at all (atomic_file.py):
a write that fails midway leaves the previous file intact and no temporary
file behind, through every way fastprof writes a path (write_profile,
Profile.dump_stats, exports.export, python -m fastprof's -o)."""
import os

import pytest

import fastprof
from fastprof import exports
from fastprof.data import profile_file
from fastprof.data.profile_file import ProfileData, load_profile, write_profile
from helpers import USING_CPROFILE

OLD = ProfileData({("a.py", 1, "old"): (1, 1, 0.5, 0.5, {})})


class Failed(Exception):
    pass


def failing_midway(*args):
    """A serializer (write_profile's or the exports') that writes part of
    the profile to its file argument, then fails."""
    out = [a for a in args if hasattr(a, "write")][0]
    out.write(b"\xfb partial")
    raise Failed("disk on fire")


def only_the_old_file(path):
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]
    assert set(load_profile(path).stats) == {("a.py", 1, "old")}


@pytest.fixture
def old_file(tmp_path):
    path = str(tmp_path / "out.prof")
    write_profile(path, OLD)
    only_the_old_file(path)
    return path


def test_write_profile_failing_midway_keeps_the_old_file(old_file, monkeypatch):
    monkeypatch.setattr(profile_file, "_write", failing_midway)
    with pytest.raises(Failed):
        write_profile(old_file, ProfileData({("b.py", 2, "new"): (1, 1, 0.1, 0.1, {})}))
    only_the_old_file(old_file)


@pytest.mark.skipif(USING_CPROFILE, reason="fastprof's dump_stats")
def test_dump_stats_failing_midway_keeps_the_old_file(old_file, monkeypatch):
    prof = fastprof.Profile()
    prof.runcall(sorted, [3, 1, 2])
    monkeypatch.setattr(profile_file, "_write", failing_midway)
    with pytest.raises(Failed):
        prof.dump_stats(old_file)
    only_the_old_file(old_file)
    monkeypatch.undo()
    prof.dump_stats(old_file)  # and a write that succeeds replaces it
    assert ("~", 0, "<built-in method builtins.sorted>") in load_profile(old_file).stats
    assert os.listdir(os.path.dirname(old_file)) == ["out.prof"]


@pytest.mark.parametrize("fmt", ["pstats", "html", "callgrind"])
def test_export_failing_midway_keeps_the_old_file(old_file, monkeypatch, fmt):
    monkeypatch.setattr(exports, "_write_to", failing_midway)
    with pytest.raises(Failed):
        exports.export(OLD, old_file, fmt)
    only_the_old_file(old_file)


def test_interrupt_midway_keeps_the_old_file(old_file, monkeypatch):
    def interrupted(f, data):
        f.write(b"\xfb")
        raise KeyboardInterrupt
    monkeypatch.setattr(profile_file, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_profile(old_file, OLD)
    only_the_old_file(old_file)


@pytest.mark.skipif(USING_CPROFILE, reason="python -m fastprof")
def test_cli_output_failing_midway_keeps_the_old_file(old_file, tmp_path):
    # the program itself breaks the serializer python -m fastprof then uses
    prog = tmp_path / "prog.py"
    prog.write_text("from fastprof.data import profile_file\n\n"
                    "def broken(f, data):\n    f.write(b'x')\n    raise OSError(28, 'No space left on device')\n\n"
                    "profile_file._write = broken\n")
    from helpers import run_python
    r = run_python(["-m", "fastprof", "-o", old_file, str(prog)])
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [
        "python -m fastprof: error: cannot write %s: No space left on device" % old_file]
    os.unlink(str(prog))
    only_the_old_file(old_file)


def test_write_bytes_atomically_writes_whole_or_keeps_the_old_file(old_file, monkeypatch):
    # the fd-only writer (calibration cache, count files): a short os.write
    # is continued; a failing one leaves the old file and no temporary file
    from fastprof.data import atomic_file
    data = bytes(range(256)) * 50
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, b: real_write(fd, bytes(b[:1000])))
    atomic_file.write_bytes_atomically(old_file + ".new", data)
    with open(old_file + ".new", "rb") as f:
        assert f.read() == data
    os.unlink(old_file + ".new")

    def fail(fd, b):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "write", fail)
    with pytest.raises(OSError):
        atomic_file.write_bytes_atomically(old_file, data)
    only_the_old_file(old_file)
