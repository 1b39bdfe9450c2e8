"""What ``pytest --fastprof-per-test DIR`` costs a test, beside what a small
file write costs (docs/pytest-ipython.md).

A generated suite of N trivial tests (``def test_i(): assert i + 1 == i + 1``)
is run by pytest in turn: without fastprof, with ``--fastprof=FILE``, with
``--fastprof-per-test DIR``, and with a conftest that writes one file of
the per-test files' size per test the way they are written (new
temporary file, written, renamed) and nothing else. Each run is a new
process writing into a new directory; its CPU time is user + system
(``os.wait4``). Medians over the repeats, then per test:

  per-test cost  = (per-test run - --fastprof run) / N
  one file write = (file-write run - plain run) / N

The suite and every run's files stay in a new temporary directory (none
is deleted while measuring: deleting many files makes the next ones
dearer to create).

    python benchmarks/questions/pytest_per_test.py --python .venv/py3.12/bin/python \\
        --pythonpath build/py3.12/lib [--tests 1000] [--repeats 8]
"""

import argparse
import os
import statistics
import sys
import tempfile

WRITER = '''\
import os
from fastprof.data.atomic_file import write_bytes_atomically

DATA = os.urandom(int(os.environ["FILE_BYTES"]))
OUT = os.environ["FILE_DIR"]


def pytest_runtest_teardown(item):
    write_bytes_atomically(os.path.join(OUT, item.name + ".prof"), DATA)
'''


def make_suite(directory, n):
    with open(os.path.join(directory, "test_many.py"), "w") as f:
        for i in range(n):
            f.write("def test_%d():\n    assert %d + 1 == %d + 1\n" % (i, i, i))
    os.mkdir(os.path.join(directory, "writer"))
    with open(os.path.join(directory, "writer", "conftest_writer.py"), "w") as f:
        f.write(WRITER)


def run(args, suite, mode, file_bytes):
    out = tempfile.mkdtemp(dir=suite)
    argv = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-p", "fastprof.modes.pytest_plugin", "test_many.py"]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.pythonpath), PYTEST_ADDOPTS="")
    if mode == "fastprof":
        argv.append("--fastprof=%s" % os.path.join(out, "all.prof"))
    elif mode == "per-test":
        argv += ["--fastprof-per-test", os.path.join(out, "each")]
    elif mode == "file-write":
        argv += ["-p", "conftest_writer"]
        env["PYTHONPATH"] += os.pathsep + os.path.join(suite, "writer")
        env.update(FILE_BYTES=str(file_bytes), FILE_DIR=out)
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.chdir(suite)
            os.execve(args.python, argv, env)
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("pytest failed in mode %s (exit %d)" % (mode, os.waitstatus_to_exitcode(status)))
    return usage.ru_utime + usage.ru_stime, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the interpreter (with pytest)")
    parser.add_argument("--pythonpath", required=True, help="where fastprof is (build/pyX.Y/lib)")
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    args.python = os.path.abspath(args.python)  # (the runs start in the suite's directory)
    if not os.access(args.python, os.X_OK):
        parser.error("no interpreter at %s" % args.python)
    if not os.path.isdir(os.path.join(args.pythonpath, "fastprof")):
        parser.error("no fastprof package in %s (make build-X.Y makes build/pyX.Y/lib)" % args.pythonpath)
    suite = tempfile.mkdtemp(prefix="fastprof-per-test-bench-")
    make_suite(suite, args.tests)
    # the size of a per-test file of this suite, for the file-write run
    _cpu, out = run(args, suite, "per-test", 0)
    each = os.path.join(out, "each")
    sizes = [os.path.getsize(os.path.join(each, f)) for f in os.listdir(each)]
    file_bytes = int(statistics.median(sizes))
    modes = ("plain", "fastprof", "per-test", "file-write")
    cpu = {m: [] for m in modes}
    for _ in range(args.repeats):
        for mode in modes:
            cpu[mode].append(run(args, suite, mode, file_bytes)[0])
    med = {m: statistics.median(v) for m, v in cpu.items()}
    print("%s: %d tests, %d repeats, a per-test file %d bytes (median)"
          % (args.python, args.tests, args.repeats, file_bytes))
    for m in modes:
        print("  %-10s CPU median %.3f s  (%.3f - %.3f)" % (m, med[m], min(cpu[m]), max(cpu[m])))
    per_test = (med["per-test"] - med["fastprof"]) / args.tests * 1e3
    write = (med["file-write"] - med["plain"]) / args.tests * 1e3
    print("per-test cost over --fastprof: %.3f ms a test" % per_test)
    print("one file write:                %.3f ms a test" % write)
    if write > 0:
        print("per-test cost / file write:    %.1f" % (per_test / write))


if __name__ == "__main__":
    main()
