"""A profile survives os._exit (issue 23, item 3): python -m fastprof, and
its children under --subprocesses, write the profile when the program
leaves through os._exit, and keep its exit status."""
import os

import pytest

from helpers import USING_CPROFILE, run_python

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="python -m fastprof")

EXITS = '''\
import os


def work():
    return sum(range(1000))


work()
print("bye")
os._exit(%d)
'''


def load(path):
    from fastprof.data.profile_file import load_profile
    return load_profile(str(path))


def names(stats):
    return {k[2] for k in stats}


@pytest.mark.parametrize("code", [0, 3])
def test_os_exit_writes_the_profile_and_keeps_the_status(tmp_path, code):
    (tmp_path / "prog.py").write_text(EXITS % code)
    out = tmp_path / "out.prof"
    r = run_python(["-m", "fastprof", "-o", str(out), "prog.py"], cwd=str(tmp_path))
    assert r.returncode == code, r.stderr
    assert r.stderr == ""
    stats = load(out).stats
    assert {"work", "<module>"} <= names(stats)
    work, = [v for k, v in stats.items() if k[2] == "work"]
    assert work[1] == 1
    # the hook is a C callable: no frame of fastprof's in the profile
    assert not [k for k in stats if "exit_hook" in k[0] or "run_cli" in k[0]]


def test_os_exit_prints_the_table(tmp_path):
    (tmp_path / "prog.py").write_text(EXITS % 4)
    r = run_python(["-m", "fastprof", "prog.py"], cwd=str(tmp_path))
    assert r.returncode == 4, r.stderr
    assert "prog.py:4(work)" in r.stdout and "function calls" in r.stdout


def test_os_exit_when_the_profile_cannot_be_written_says_why(tmp_path):
    out = tmp_path / "sub" / "out.prof"
    (tmp_path / "sub").mkdir()
    # the directory goes away while the program runs
    (tmp_path / "prog.py").write_text("import os, shutil\nshutil.rmtree(%r)\nos._exit(3)\n"
                                      % str(tmp_path / "sub"))
    r = run_python(["-m", "fastprof", "-o", str(out), "prog.py"], cwd=str(tmp_path))
    assert r.returncode == 3
    assert len(r.stderr.splitlines()) == 1 and "cannot write" in r.stderr, r.stderr


def test_os_exit_from_a_thread(tmp_path):
    (tmp_path / "prog.py").write_text(
        "import os, threading, time\n"
        "def worker():\n"
        "    time.sleep(0.01)\n"
        "    os._exit(5)\n"
        "threading.Thread(target=worker).start()\n")
    out = tmp_path / "out.prof"
    r = run_python(["-m", "fastprof", "-o", str(out), "prog.py"], cwd=str(tmp_path))
    assert r.returncode == 5, r.stderr
    assert "worker" in names(load(out).stats)


FORKS = '''\
import os


def child_work():
    return sum(i * i for i in range(2000))


def parent_work():
    return sum(range(100))


print("start")  # in the parent's buffer at the fork: printed once only
pid = os.fork()
if pid == 0:
    child_work()
    os._exit(7)
_, st = os.waitpid(pid, 0)
parent_work()
print("child status", st >> 8)
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_fork_child_os_exit_under_subprocesses(tmp_path):
    (tmp_path / "prog.py").write_text(FORKS)
    out = tmp_path / "out.prof"
    r = run_python(["-m", "fastprof", "--subprocesses", "-o", str(out), "prog.py"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "start\nchild status 7\n"
    stats = load(out).stats
    assert {"child_work", "parent_work"} <= names(stats)
    child, = [v for k, v in stats.items() if k[2] == "child_work"]
    assert child[1] == 1
    kept = sorted(os.listdir(str(out) + ".processes"))
    assert len(kept) == 2, kept  # the parent's and the child's


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_fork_child_os_exit_not_followed(tmp_path):
    """Without --subprocesses the child's os._exit is the real one: its
    profile is not the child's to write, nor are the parent's buffers."""
    (tmp_path / "prog.py").write_text(FORKS)
    r = run_python(["-m", "fastprof", "prog.py"], cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("start\n") == 1 and r.stdout.count("function calls") == 1
    assert "child_work" not in r.stdout and "parent_work" in r.stdout


def test_api_os_exit_is_untouched():
    """Only the run modes wrap os._exit, and only while they record."""
    import fastprof
    real = os._exit
    with fastprof.Profile():
        assert os._exit is real
