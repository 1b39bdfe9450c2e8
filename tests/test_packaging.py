"""Packaging (issue 12, items 6 and 7).

- A checkout without uthash stops, before compiling, with one line that says
  what to install; a user's build has no -Werror, the project's builds do.
- The sdist carries uthash.h (the one it was built with) and its license.
- `scripts/build-wheels.sh` (what `make wheels` runs) makes a manylinux_2_17
  wheel that installs into a fresh venv with no network and profiles a script.

The sdist + wheel + venv tests are slow: they run on PACKAGING_PY only (one
version in `make test`), or on any version with FASTPROF_PACKAGING_TESTS=1.
"""
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSION = "%d.%d" % sys.version_info[:2]
PACKAGING_PY = "3.15"  # in tests/version_sample.py's PLAIN_SAMPLE
SYSTEM_UTHASH = Path("/usr/include/uthash.h")     # Debian's uthash-dev (scripts/apt-packages.txt)
MISSING_LINE = ("fastprof: uthash.h not found; install uthash (Debian/Ubuntu: apt install uthash-dev, "
                "Fedora: dnf install uthash-devel, macOS: brew install uthash) or build from the sdist, "
                "which carries it")
# What a source checkout needs to build (the rest of the repo is dev tooling).
SOURCE_FILES = ["setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "csrc", "python"]

slow = pytest.mark.skipif(
    VERSION != PACKAGING_PY and os.environ.get("FASTPROF_PACKAGING_TESTS") != "1",
    reason="slow (sdist, wheel, venv): runs on Python %s only; FASTPROF_PACKAGING_TESTS=1 runs it here"
           % PACKAGING_PY)
not_sanitized = pytest.mark.skipif(
    os.environ.get("FASTPROF_SANITIZED") == "1",
    reason="builds and runs a release wheel: nothing for the sanitizers to check")


def build_env(**extra):
    """The environment of a user's build: none of the project's switches, no
    sanitizer preload, no PYTHONPATH to the build under test."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FASTPROF_") and k not in ("LD_PRELOAD", "PYTHONMALLOC", "PYTHONPATH")}
    env.update(extra)
    return env


def copy_checkout(dest):
    dest.mkdir()
    for name in SOURCE_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)
    return dest


# --- a build from a checkout (fast: runs on every version) -------------------

def test_checkout_without_uthash_stops_in_one_line(tmp_path):
    src = copy_checkout(tmp_path / "src")
    empty = tmp_path / "no-uthash"
    empty.mkdir()
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "temp")],
                       cwd=src, capture_output=True, text=True, timeout=300,
                       env=build_env(FASTPROF_UTHASH_INCLUDE=str(empty)))
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == MISSING_LINE, r.stderr
    assert r.stderr.count("uthash") == MISSING_LINE.count("uthash"), r.stderr   # no compiler error after it
    assert not list(tmp_path.rglob("*.o"))                                     # nothing was compiled


def compile_commands(tmp_path, **env):
    """The compiler's first command line in a build from a checkout copy, with
    CC a recorder that fails at once (so nothing is really compiled)."""
    src = copy_checkout(tmp_path / "src")
    log = tmp_path / "cc-args"
    cc = tmp_path / "record-cc"
    cc.write_text('#!/bin/sh\necho "$@" >> %s\nexit 1\n' % log)
    cc.chmod(0o755)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "temp")],
                   cwd=src, capture_output=True, text=True, timeout=300,
                   env=build_env(CC=str(cc), LDSHARED="%s -shared" % cc, **env))
    lines = log.read_text().splitlines()
    assert lines and " -c " in lines[0], lines
    return lines[0].split()


def test_user_build_has_no_werror(tmp_path):
    args = compile_commands(tmp_path)
    assert "-Werror" not in args
    assert "-Wall" in args and "-Wextra" in args       # the warnings still show


def test_project_build_has_werror(tmp_path):
    assert "-Werror" in compile_commands(tmp_path, FASTPROF_WERROR="1")


def test_project_scripts_ask_for_werror():
    # the builds of `make test` and `make dev`; tests/c has its own -Werror
    assert re.search(r"^FASTPROF_WERROR=1 .*setup\.py", (ROOT / "scripts/build.sh").read_text(), re.M)
    assert "FASTPROF_WERROR=1" in (ROOT / "Makefile").read_text()
    assert "-Werror" in (ROOT / "tests/c/Makefile").read_text()


# --- the sdist and one wheel (slow: one version) -----------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """scripts/build-wheels.sh for this version: {'sdist', 'wheel', 'log', 'dir'}."""
    if not SYSTEM_UTHASH.is_file():
        pytest.skip("uthash.h not in /usr/include (make deps installs uthash-dev)")
    out = tmp_path_factory.mktemp("dist")
    work = tmp_path_factory.mktemp("work")
    r = subprocess.run([str(ROOT / "scripts/build-wheels.sh"), "-o", str(out), VERSION],
                       capture_output=True, text=True, timeout=1500,
                       env=build_env(FASTPROF_WHEELS_WORK=str(work)))
    assert r.returncode == 0, r.stdout + r.stderr
    sdists = list(out.glob("fastprof-*.tar.gz"))
    wheels = list(out.glob("fastprof-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, (sdists, wheels)
    return {"sdist": sdists[0], "wheel": wheels[0], "log": (work / ("py%s.log" % VERSION)).read_text(),
            "dir": out}


@slow
@not_sanitized
def test_sdist_carries_uthash_and_its_license(built):
    with tarfile.open(built["sdist"]) as tar:
        top = tar.getnames()[0].split("/")[0]
        files = {m.name[len(top) + 1:]: m for m in tar.getmembers() if m.isfile()}
        read = lambda name: tar.extractfile(files[name]).read()     # noqa: E731
        assert read("third_party/uthash/uthash.h") == SYSTEM_UTHASH.read_bytes()
        lic = read("third_party/uthash/LICENSE").decode()
        assert "Copyright (c) 2003-" in lic and "Troy D. Hanson" in lic
        assert "Redistributions of source code must retain the above copyright" in lic
        assert "MIT License" in read("LICENSE").decode()
        pkg_info = read("PKG-INFO").decode()
    for v in ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"):
        assert "Classifier: Programming Language :: Python :: %s\n" % v in pkg_info
    assert "Requires-Python: >=3.9" in pkg_info
    assert "License-Expression: MIT" in pkg_info and "License-File: LICENSE" in pkg_info
    assert "Project-URL: " in pkg_info
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in files)
    for asset in ("report.html", "report.css", "report.js"):
        assert "python/fastprof/report_assets/" + asset in files


@slow
@not_sanitized
def test_wheel_is_built_from_the_sdist_without_werror(built):
    compiles = [line for line in built["log"].splitlines() if " -c csrc/" in line]
    assert len(compiles) == len(list((ROOT / "csrc").glob("*.c"))), built["log"][-3000:]
    assert not [line for line in compiles if "-Werror" in line]
    assert all("third_party/uthash" in line for line in compiles)      # the sdist's copy, not the system's


@slow
@not_sanitized
def test_wheel_and_sdist_carry_the_type_stub(built):
    # python/fastprof/_fastprof.pyi and py.typed: package data (PEP 561)
    with zipfile.ZipFile(built["wheel"]) as z:
        assert {"fastprof/_fastprof.pyi", "fastprof/py.typed"} <= set(z.namelist())
    with tarfile.open(built["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"python/fastprof/_fastprof.pyi", "python/fastprof/py.typed"} <= names


@slow
@not_sanitized
def test_wheel_is_manylinux_2_17(built):
    name = built["wheel"].name
    assert "manylinux_2_17_%s" % os.uname().machine in name and "manylinux2014" in name, name
    with zipfile.ZipFile(built["wheel"]) as z:
        sos = [n for n in z.namelist() if n.startswith("fastprof/_fastprof") and n.endswith(".so")]
        assert len(sos) == 1, z.namelist()
        so = built["dir"] / "ext.so"
        so.write_bytes(z.read(sos[0]))
        assert "fastprof-0.1.0.dist-info/licenses/LICENSE" in z.namelist()
        # the HTML report's page, read with pkgutil.get_data at export time
        for asset in ("report.html", "report.css", "report.js"):
            assert "fastprof/report_assets/" + asset in z.namelist(), z.namelist()
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) not installed")
    # every glibc symbol version the extension needs is at most 2.17
    syms = subprocess.run(["objdump", "-T", str(so)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_([0-9.]+)", syms)}
    assert versions and max(versions) <= (2, 17), sorted(versions)


def wheel_venv(built, tmp_path):
    """A fresh venv with the wheel installed offline: (venv dir, its python, env)."""
    base = subprocess.run([str(ROOT / "scripts/find-python.sh"), VERSION], capture_output=True, text=True,
                          check=True).stdout.strip()
    venv = tmp_path / "venv"
    env = build_env()
    subprocess.run([base, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-deps", "--no-input", "-q",
                    str(built["wheel"])], check=True, env=env, timeout=300)
    return venv, py, env


@slow
@not_sanitized
def test_wheel_installs_offline_and_profiles(built, tmp_path):
    venv, py, env = wheel_venv(built, tmp_path)
    script = tmp_path / "work.py"
    script.write_text("import sys\n"
                      "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                      "print(fib(15))\nsys.exit(3)\n")
    prof = tmp_path / "out.prof"
    r = subprocess.run([str(py), "-m", "fastprof", "-o", str(prof), str(script)], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 3, r.stderr            # the script's exit status is kept
    assert r.stdout == "610\n"
    check = ("import fastprof, pstats, sys\n"
             "print(fastprof.__file__)\n"
             "st = pstats.Stats(sys.argv[1]).stats\n"
             "print([v[1] for k, v in st.items() if k[2] == 'fib'][0])\n")
    r = subprocess.run([str(py), "-c", check, str(prof)], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=300, check=True)
    where, calls = r.stdout.splitlines()
    assert where.startswith(str(venv / "lib")), where    # the installed wheel, not the build under test
    assert calls == "1973"                                # fib(15) calls fib 1973 times
    # (sorted by calls: fib's 1973 calls come first whatever its time)
    r = subprocess.run([str(venv / "bin" / "fastprof"), "view", str(prof), "-s", "calls", "-n", "3"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "fib" in r.stdout, r.stdout + r.stderr


@slow
@not_sanitized
def test_wheel_registers_the_pytest_plugin(built, tmp_path):
    venv, py, env = wheel_venv(built, tmp_path)
    # pytest for that venv, offline: the pytest running this test, found through
    # a .pth file (after the venv's own site-packages, so fastprof is the wheel's)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=env).stdout.strip()
    Path(site, "test-pytest.pth").write_text(str(Path(pytest.__file__).resolve().parent.parent) + "\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_fib.py").write_text(
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "def test_fib():\n    assert fib(15) == 610\n")

    def pytest_in_venv(*args):
        return subprocess.run([str(py), "-m", "pytest", "-p", "no:cacheprovider"] + list(args),
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)

    r = pytest_in_venv("test_fib.py", "--fastprof")   # no -p: the pytest11 entry point loads it
    assert r.returncode == 0, r.stdout + r.stderr
    assert "profile written to %s" % (tmp_path / "fastprof.prof") in r.stdout
    check = ("import fastprof, pstats\n"
             "print(fastprof.__file__)\n"
             "print([v[1] for k, v in pstats.Stats('fastprof.prof').stats.items() if k[2] == 'fib'][0])\n")
    where, calls = subprocess.run([str(py), "-c", check], cwd=tmp_path, capture_output=True, text=True,
                                  env=env, check=True).stdout.splitlines()
    assert where.startswith(str(venv / "lib")), where
    assert calls == "1973"
    (tmp_path / "fastprof.prof").unlink()
    r = pytest_in_venv("test_fib.py", "-p", "no:fastprof", "--fastprof")
    assert r.returncode == 4 and "unrecognized arguments: --fastprof" in r.stderr, r.stdout + r.stderr
    r = pytest_in_venv("test_fib.py", "-p", "no:fastprof")
    assert r.returncode == 0 and "fastprof" not in r.stdout
    assert not (tmp_path / "fastprof.prof").exists()


@slow
@not_sanitized
def test_wheel_loads_the_ipython_extension(built, tmp_path):
    ipython = pytest.importorskip("IPython")
    venv, py, env = wheel_venv(built, tmp_path)
    # IPython for that venv, offline: the one of the Python running this test,
    # found through a .pth file (after the venv's own site-packages)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=env).stdout.strip()
    Path(site, "test-ipython.pth").write_text(str(Path(ipython.__file__).resolve().parent.parent) + "\n")
    check = ("import fastprof\n"
             "from IPython.core.interactiveshell import InteractiveShell\n"
             "shell = InteractiveShell.instance()\n"
             "shell.run_cell('%load_ext fastprof')\n"
             "shell.run_cell('def fib(n):\\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\\n')\n"
             "shell.run_cell('%fastprof -o out.prof fib(15)')\n"
             "import pstats\n"
             "print(fastprof.__file__)\n"
             "print([v[1] for k, v in pstats.Stats('out.prof').stats.items() if k[2] == 'fib'][0])\n")
    r = subprocess.run([str(py), "-c", check], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "%%fastprof: profile written to %s" % (tmp_path / "out.prof") in lines
    assert lines[-2].startswith(str(venv / "lib")), lines    # the installed wheel
    assert lines[-1] == "1973"                               # fib(15) calls fib 1973 times
