"""fastprof's offline commands on a machine where the C extension cannot be
built: ``fastprof view``, ``diff``, ``merge``, ``check`` and ``convert``
import nothing that needs ``fastprof._fastprof`` (the data model's C loops
are accelerators with pure-Python twins), and print and write exactly what
they do with it, for profiles made with it.  Profiling itself refuses in
one line that says what is missing and what still works.

The child interpreters import a copy of the package without the extension
module (what an install that could not build it has)."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import USING_CPROFILE, cli_env

if USING_CPROFILE:
    pytest.skip("fastprof's C extension", allow_module_level=True)

import fastprof  # noqa: E402

WORK = textwrap.dedent("""\
    import threading

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def spin(n):
        total = 0
        for i in range(n):
            total += len(str(i))
        return total

    def run(n):
        t = threading.Thread(target=spin, args=(n * 50,), name="worker")
        t.start()
        fib(n)
        object.__new__(object)  # (a C function named with an address on some versions)
        sorted([3, 1, 2], key=lambda x: -x)
        t.join()
    """)


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """Two profiles recorded with the extension (threads, call paths, line
    stats, recursion, C functions), and a copy of the package without it."""
    root = tmp_path_factory.mktemp("noext")
    (root / "offline_work.py").write_text(WORK)
    sys.path.insert(0, str(root))
    try:
        import offline_work
        for name, n in (("a", 14), ("b", 16)):
            prof = fastprof.Profile(threads=True, callpaths=True, lines=["offline_work:spin"])
            prof.runcall(offline_work.run, n)
            prof.dump_stats(str(root / (name + ".prof")))
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("offline_work", None)
    pkg = os.path.dirname(os.path.abspath(fastprof.__file__))
    copy = root / "pkg"
    shutil.copytree(pkg, str(copy / "fastprof"),
                    ignore=shutil.ignore_patterns("_fastprof.*.so", "_fastprof.*.pyd", "_fastprof.so",
                                                  "__pycache__"))
    assert not [f for f in os.listdir(str(copy / "fastprof")) if f.startswith("_fastprof.")
                and not f.endswith(".pyi")]
    return root


def env_without_extension(root):
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(root / "pkg")] + [
        p for p in env["PYTHONPATH"].split(os.pathsep) if p])
    return env


def run(args, cwd, env):
    return subprocess.run([sys.executable] + args, cwd=str(cwd), env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_copy_has_no_extension(profiles):
    r = run(["-c", "import fastprof, fastprof._fastprof"], profiles, env_without_extension(profiles))
    assert r.returncode == 1 and "No module named 'fastprof._fastprof'" in r.stderr, r.stderr
    r = run(["-c", "import fastprof; print(fastprof.__file__)"], profiles,
            env_without_extension(profiles))
    assert r.stdout.strip() == str(profiles / "pkg" / "fastprof" / "__init__.py")


COMMANDS = [
    ["view", "{a}"],
    ["view", "{a}", "-s", "cumulative", "-n", "50"],
    ["view", "{a}", "--callers", "fib"],
    ["view", "{a}", "--callees", "run"],
    ["view", "{a}", "--tree", "--min-percent", "0"],
    ["view", "{a}", "--lines"],
    ["view", "{a}", "--thread", "worker"],
    ["diff", "{a}", "{b}", "--min-time", "0"],
    ["check", "{a}", "{b}"],
    ["merge", "-o", "merged.prof", "{a}", "{b}"],
    ["view", "merged.prof", "-n", "50"],
    ["view", "merged.prof", "--lines"],
    ["convert", "{a}", "-o", "a.collapsed", "--min-percent", "0"],
    ["convert", "{a}", "-o", "a.callgrind"],
    ["convert", "{a}", "-o", "a.speedscope.json"],
    ["convert", "{a}", "-o", "a.html"],
    ["convert", "merged.prof", "-o", "merged.collapsed"],
]


def test_offline_commands_print_and_write_what_they_do_with_the_extension(profiles):
    """Each command, in order (merge's output is read after), run with the
    extension and without it: the same exit status, the same text, the same
    files."""
    a, b = str(profiles / "a.prof"), str(profiles / "b.prof")
    ran = {}
    for kind, env in (("with", cli_env()), ("without", env_without_extension(profiles))):
        cwd = profiles / kind
        cwd.mkdir()
        out = ran[kind] = []
        for args in COMMANDS:
            r = run(["-m", "fastprof.cli"] + [x.format(a=a, b=b) for x in args], cwd, env)
            assert "Traceback" not in r.stderr, (kind, args, r.stderr)
            out.append((args, r.returncode, r.stdout, r.stderr))
        # what the child imported: never the extension without it
        r = run(["-c", "import sys, fastprof.cli as c\n"
                       "c.main(['merge', '-o', 'again.prof', %r, %r])\n"
                       "print('fastprof._fastprof' in sys.modules)" % (a, b)], cwd, env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().endswith(("True" if kind == "with" else "False")), r.stdout
    for got, want in zip(ran["without"], ran["with"]):
        assert got == want, got[0]
    assert ran["with"][7][1] == 0 and "fib" in ran["with"][7][2]  # diff said something
    assert "spin" in ran["with"][5][2]  # the line listing is there
    names = sorted(os.listdir(str(profiles / "with")))
    assert names == sorted(os.listdir(str(profiles / "without")))
    assert {"merged.prof", "a.collapsed", "a.callgrind", "a.speedscope.json", "a.html"} <= set(names)
    for name in names:
        with open(str(profiles / "with" / name), "rb") as f, \
                open(str(profiles / "without" / name), "rb") as g:
            assert without_time_written(f.read()) == without_time_written(g.read()), name


def without_time_written(content):
    """A file's bytes less the time the HTML report says it was made."""
    return re.sub(rb'"created":"[^"]*"', b'"created":""', content)


def test_profiling_without_the_extension_says_so_in_one_line(profiles):
    r = run(["-c", textwrap.dedent("""\
        import fastprof
        fastprof.label  # (the naming helpers need no extension)
        try:
            fastprof.Profile()
        except ImportError as exc:
            print(repr(str(exc)))
        """)], profiles, env_without_extension(profiles))
    assert r.returncode == 0, r.stderr
    message = eval(r.stdout)
    assert "\n" not in message
    assert message.startswith("fastprof's C extension is missing (")
    assert "view, diff, merge and convert work without it" in message
    r = run(["-c", "import fastprof; fastprof.Profile()"], profiles, env_without_extension(profiles))
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == "ImportError: " + message
