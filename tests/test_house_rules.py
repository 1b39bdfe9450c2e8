"""The house rules of python/fastprof that `make lint` enforces beyond
import-linter (scripts/check_house.py): every module on a floor of its
wing's contract, no reach-in to Profile's private names or to a sibling run
mode's. Each rule is shown holding on this tree and failing on a copy that
breaks it."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_house.py")

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="check_house.py reads pyproject.toml with tomllib")


def check(package_dir=None):
    args = [sys.executable, SCRIPT]
    if package_dir is not None:
        args += [str(package_dir), os.path.join(ROOT, "pyproject.toml")]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@pytest.fixture
def copy(tmp_path):
    dest = tmp_path / "fastprof"
    shutil.copytree(os.path.join(ROOT, "python", "fastprof"), dest,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return dest


def test_this_tree_keeps_the_rules():
    r = check()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every module on a floor, no private reach-in" in r.stdout


def test_a_module_on_no_floor_fails(copy):
    (copy / "tools" / "stray.py").write_text('"""A new module nobody put on a floor."""\n')
    (copy / "loose.py").write_text('"""A new top-level module."""\n')
    r = check(copy)
    assert r.returncode == 1
    assert "fastprof.tools.stray is on no floor" in r.stdout
    assert "fastprof.loose is on no floor" in r.stdout
    assert "2 breach(es)" in r.stdout


def test_a_reach_into_profile_fails(copy):
    path = copy / "modes" / "per_test.py"
    text = path.read_text()
    path.write_text(text + "\n\ndef _names(prof):\n    return prof._thread_names\n")
    r = check(copy)
    assert r.returncode == 1
    assert "modes/per_test.py:" in r.stdout and "prof._thread_names is Profile's private name" in r.stdout


def test_a_reach_into_the_c_base_fails(copy):
    path = copy / "tools" / "merge.py"
    path.write_text(path.read_text() + "\n\ndef _fold(a, b):\n    a._fold_into(b, [])\n")
    r = check(copy)
    assert r.returncode == 1
    assert "a._fold_into is Profile's private name" in r.stdout


def test_a_mode_using_a_sibling_modes_private_names_fails(copy):
    path = copy / "modes" / "top.py"
    path.write_text(path.read_text() + "\n\ndef _peek(d):\n    return attach._exists(d, 'done')\n")
    path = copy / "modes" / "run_command.py"
    path.write_text(path.read_text() + "\n\nfrom .subprocesses import _read_unmatched  # noqa\n")
    r = check(copy)
    assert r.returncode == 1
    assert "attach._exists is a private name of fastprof.modes.attach" in r.stdout
    assert "imports _read_unmatched from subprocesses" in r.stdout
