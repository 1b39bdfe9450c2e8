"""Memory profiling on the command line and in files: ``python -m fastprof
--memory``, the ``.prof`` trailer's ``memory`` and ``fastprof view
--memory``.

- the printed run: the process's traced bytes, then a table in which a
  function that makes a ``bytearray(10**6)`` shows it;
- ``-o x.prof``: pstats reads the table unchanged; ``load_profile``
  gives back ``memory`` (``{key: MemoryRow}``, as ``memory_stats()``) and
  the totals; the trailer round-trips exactly;
- ``fastprof view --memory``: sorted by any memory column, in human
  units; one-line errors for a file without memory, a memory sort key
  without ``--memory``, a time key with it, ``--tree`` with ``--thread``;
- each thread's own memory (``thread_records()``, ``profile_data(thread=)``,
  the file's thread records, ``view --memory --thread``, merge);
- what a thread allocates after ``disable(this_thread=True)`` belongs to
  no row (the run's own ending would otherwise show as ``disable``'s).
"""
import os
import pstats
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="memory is fastprof's")

MB = 10**6

PROGRAM = """\
def make(n):
    return [bytearray(1000) for _ in range(n)]

def churn():
    for _ in range(3):
        b = bytearray(10**6)
        del b

def main():
    keep = make(1000)
    churn()
    return keep

main()
"""


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fastprof"] + list(args), cwd=cwd,
                          env=helpers.cli_env(), capture_output=True, text=True, timeout=300)


def _view(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fastprof.cli", "view"] + list(args), cwd=cwd,
                          env=helpers.cli_env(), capture_output=True, text=True, timeout=300)


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def _row(table, name):
    (key,) = [k for k in table if k[2] == name]
    return table[key]


def test_printed_run(program, tmp_path):
    out = _run("--memory", str(program), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    (totals,) = [line for line in lines if line.startswith("memory: ")]
    assert "at the peak" in totals and "alive at the end" in totals
    header = lines.index(next(line for line in lines if line.split()[:2] == ["allocated", "incl"]))
    rows = lines[header + 1:]
    # sorted by allocated: churn's 3 MB first, each call's peak its 10**6 bytes
    assert "churn" in rows[0] and rows[0].split()[:2] == ["2.9", "MiB"], rows[0]
    assert "977 KiB" in rows[0]
    assert not any("disable" in line and "KiB" in line for line in rows), rows


def test_file_keeps_memory(program, tmp_path):
    from fastprof.profile_file import load_profile
    out = _run("--memory", "-o", "m.prof", str(program), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    path = str(tmp_path / "m.prof")
    data = load_profile(path)
    assert pstats.Stats(path).stats == data.stats  # the pstats part is untouched
    churn = _row(data.memory, "churn")
    assert 3 * MB <= churn.allocated < 3 * MB + 1000, churn
    assert MB <= churn.peak < MB + 1000, churn
    assert churn.net == 0 and churn.allocations >= 3
    make = _row(data.memory, "make")
    # (before 3.12 the list comprehension is a function of its own: its bytes are make's callee's)
    assert 1000 * 1000 <= make.allocated_incl < 1000 * 1200, make
    main = _row(data.memory, "main")
    assert main.allocated_incl >= churn.allocated + make.allocated, main
    assert set(main.callers) == {k for k in data.stats if k[2] == "<module>"}
    totals = data.memory_totals
    assert totals["peak"] >= 1000 * 1000 + MB, totals
    assert set(totals) == {"current", "peak", "blocks", "allocations", "lost"}


def test_trailer_round_trip(tmp_path):
    from fastprof.data.memory import MemoryRow
    from fastprof.profile_file import ProfileData, load_profile, write_profile
    key, caller = ("a.py", 1, "f"), ("a.py", 9, "g")
    row = MemoryRow(3, 300, 1, 100, 200, 50, 900, 700)
    row.callers = {caller: MemoryRow(3, 300, 1, 100, 200, 50, 900, 700)}
    stats = {key: (1, 1, 0.1, 0.1, {caller: (1, 1, 0.1, 0.1)}), caller: (1, 1, 0.0, 0.1, {})}
    totals = {"current": 10, "peak": 20, "blocks": 1, "allocations": 5, "lost": 0}
    write_profile(str(tmp_path / "x.prof"), ProfileData(stats, memory={key: row}, memory_totals=totals))
    back = load_profile(str(tmp_path / "x.prof"))
    assert back.memory == {key: row} and back.memory_totals == totals
    assert load_profile(_write_plain(tmp_path, stats)).memory is None


def _write_plain(tmp_path, stats):
    from fastprof.profile_file import ProfileData, write_profile
    path = str(tmp_path / "plain.prof")
    write_profile(path, ProfileData(stats))
    return path


def test_view_memory(program, tmp_path):
    assert _run("--memory", "-o", "m.prof", str(program), cwd=tmp_path).returncode == 0
    out = _view("m.prof", "--memory", "-s", "held", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("memory: ") for line in lines)
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["allocated", "incl"])
    held = [line.split()[8:10] for line in lines[header + 1:] if line.strip() and "  " in line][:2]
    assert "sorted by live_at_peak" in out.stdout
    # make's 1000 blocks of ~1 KB were alive at the process's peak; churn's last 1 MB too
    assert [h[1] for h in held] in (["MiB", "KiB"], ["KiB", "KiB"]), lines
    plain = _view("m.prof", cwd=tmp_path)
    assert plain.returncode == 0 and "memory: " in plain.stdout  # the totals in the header


def _bytes(text):
    """``1.1 MiB`` -> bytes (to the table's three digits)."""
    number, unit = text.split()
    return float(number) * 1024 ** ("B", "KiB", "MiB", "GiB").index(unit)


def _edge_rows(out, label):
    """The rows of each table under a ``--callers``/``--callees`` header: [(allocated, incl, share, name)]."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[-2:] == ["incl", label])
    rows = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        cells = line.split()
        rows.append((_bytes(" ".join(cells[0:2])), _bytes(" ".join(cells[2:4])), cells[11], cells[12]))
    return rows


def test_view_memory_callers_and_callees(program, tmp_path):
    assert _run("--memory", "-o", "m.prof", str(program), cwd=tmp_path).returncode == 0
    data = __import__("fastprof.profile_file", fromlist=["x"]).load_profile(str(tmp_path / "m.prof"))
    churn = _row(data.memory, "churn")
    out = _view("m.prof", "--memory", "--callees", "^main$", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = _edge_rows(out.stdout, "callee")
    # churn's three megabytes first, then make's thousand kilobytes; shares of main's bytes with callees
    assert [r[3] for r in rows] == ["churn", "make"], out.stdout
    assert rows[0][1] == pytest.approx(churn.allocated_incl, rel=0.02)  # (the table rounds to 0.1 MiB)
    assert 3 * MB <= rows[0][1] and 0.9 * MB <= rows[1][1] < 1.3 * MB, rows
    main = _row(data.memory, "main")
    assert rows[0][2] == "%.0f%%" % (100.0 * churn.allocated_incl / main.allocated_incl)
    out = _view("m.prof", "--memory", "--callers", "^churn$", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [(r[2], r[3]) for r in _edge_rows(out.stdout, "caller")] == [("100%", "main")], out.stdout
    assert "allocated 2.9 MiB itself, 2.9 MiB with callees; net 0 B" in out.stdout


def test_view_memory_tree(program, tmp_path):
    assert _run("--memory", "--callpaths", "-o", "m.prof", str(program), cwd=tmp_path).returncode == 0
    out = _view("m.prof", "--memory", "--tree", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "(bytes allocated, along each call path)" in out.stdout
    paths = [line for line in out.stdout.splitlines() if line.rstrip().endswith(("prog.py:1)", "prog.py:4)", "prog.py:9)"))]
    names = [line.split("(")[0].split()[-1] for line in paths]
    # by bytes allocated: churn (3 MB) above make (1 MB), both under main, every total in bytes
    assert names[-3:] == ["main", "churn", "make"], out.stdout
    churn = paths[-2].split()
    assert 2.8 <= float(churn[0]) <= 2.9 and churn[1] == "MiB", paths
    held = _view("m.prof", "--memory", "--tree", "-s", "held", cwd=tmp_path)
    assert "(bytes alive at the process's peak, along each call path)" in held.stdout
    held_paths = [line for line in held.stdout.splitlines() if "prog.py:1)" in line or "prog.py:4)" in line]
    assert "make" in held_paths[-2], held.stdout  # at the peak make's kilobytes and one of churn's megabytes


def test_diff_lists_bytes_that_moved(program, tmp_path):
    assert _run("--memory", "-o", "base.prof", str(program), cwd=tmp_path).returncode == 0
    program.write_text(PROGRAM.replace("range(3)", "range(5)"))
    assert _run("--memory", "-o", "new.prof", str(program), cwd=tmp_path).returncode == 0
    assert _run("-o", "plain.prof", str(program), cwd=tmp_path).returncode == 0
    out = subprocess.run([sys.executable, "-m", "fastprof.cli", "diff", "base.prof", "new.prof"],
                         cwd=tmp_path, env=helpers.cli_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    section = out.stdout[out.stdout.index("\nMemory: "):].splitlines()
    assert section[1].startswith("Memory: the process's peak "), section
    header = next(i for i, line in enumerate(section) if line.split()[:2] == ["base", "allocated"])
    # churn alone moved beyond 10% and 1 KiB: three megabytes to five
    assert [line.split() for line in section[header + 1:header + 2]] == [
        ["2.9", "MiB", "4.8", "MiB", "+1.9", "MiB", "+67%", "prog.py:churn"]], section
    assert section[header + 2].startswith("1 of 1 functions whose own bytes moved"), section
    same = subprocess.run([sys.executable, "-m", "fastprof.cli", "diff", "base.prof", "base.prof"],
                          cwd=tmp_path, env=helpers.cli_env(), capture_output=True, text=True, timeout=300)
    assert "no function's own bytes moved by more than 10% and 1.0 KiB" in same.stdout, same.stdout
    half = subprocess.run([sys.executable, "-m", "fastprof.cli", "diff", "plain.prof", "new.prof"],
                          cwd=tmp_path, env=helpers.cli_env(), capture_output=True, text=True, timeout=300)
    assert "Memory: only new.prof has memory stats" in half.stdout, half.stdout


@pytest.mark.parametrize("args, status, message", [
    (["--memory", "x.prof"], 1, "has no memory stats"),
    (["--memory", "--tree", "m.prof"], 1, "no memory along call paths: profile with --memory --callpaths"),
    (["--memory", "--tree", "-s", "peak", "m.prof"], 2, "--memory --tree draws bytes allocated, held or net"),
    (["--memory", "--lines", "main", "m.prof"], 2, "bytes are kept per function, not per line"),
    (["-s", "peak", "x.prof"], 2, "-s peak sorts by a memory column: add --memory"),
    (["--memory", "-s", "tottime", "m.prof"], 2, "--memory sorts by a memory column"),
    (["--memory", "--tree", "--thread", "1", "m.prof"], 2,
     "--memory --tree draws every thread's call paths: leave out --thread"),
])
def test_view_memory_errors(program, tmp_path, args, status, message):
    assert _run("--memory", "-o", "m.prof", str(program), cwd=tmp_path).returncode == 0
    assert _run("-o", "x.prof", str(program), cwd=tmp_path).returncode == 0
    out = _view(*args, cwd=tmp_path)
    assert out.returncode == status, (out.stdout, out.stderr)
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def _worker_alloc(keep):
    keep.append(bytearray(MB))


def _main_alloc(keep):
    keep.append(bytearray(3 * MB))


def _two_threads_with_memory():
    import threading

    from fastprof import Profile
    keep = []
    prof = Profile(memory=True, threads=True)
    prof.enable()
    worker = threading.Thread(target=_worker_alloc, args=(keep,), name="worker-b")
    worker.start()
    worker.join()
    _main_alloc(keep)
    prof.disable()
    return prof, worker


def _allocated(table, name):
    return sum(row.allocated for key, row in table.items() if key[2] == name)


def test_memory_per_thread(tmp_path):
    from fastprof.data.profile_file import load_profile
    from fastprof.tools.merge import MAX_INPUTS_THREADS_APART, merge_profiles
    prof, worker = _two_threads_with_memory()
    records = {r["name"]: r for r in prof.thread_records()}
    # each thread's own bytes, in its record only; together, the profile's
    assert MB <= _allocated(records["worker-b"]["memory"], "_worker_alloc") < MB + 200
    assert _allocated(records["worker-b"]["memory"], "_main_alloc") == 0
    assert 3 * MB <= _allocated(records["MainThread"]["memory"], "_main_alloc") < 3 * MB + 200
    assert _allocated(records["MainThread"]["memory"], "_worker_alloc") == 0
    whole = prof.memory_stats()
    for key, row in whole.items():
        assert row.allocated == sum(r["memory"][key].allocated for r in records.values()
                                    if key in r["memory"]), key
    one = prof.profile_data(thread=worker)
    assert {k: r.allocated for k, r in one.memory.items()} == {
        k: r.allocated for k, r in records["worker-b"]["memory"].items()}
    # the file keeps them; view --memory --thread shows that thread's
    prof.dump_stats(str(tmp_path / "t.prof"))
    data = load_profile(str(tmp_path / "t.prof"))
    kept = {t["name"]: t for t in data.threads}
    for name, record in records.items():
        assert {k: (r.allocated, r.net, r.live_at_peak) for k, r in kept[name]["memory"].items()} == {
            k: (r.allocated, r.net, r.live_at_peak) for k, r in record["memory"].items()}
    out = _view("--memory", "--thread", "worker-b", "t.prof", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "_worker_alloc" in out.stdout and "_main_alloc" not in out.stdout, out.stdout
    out = _view("--memory", "--thread", "MainThread", "t.prof", cwd=tmp_path)
    assert "_main_alloc" in out.stdout and "_worker_alloc" not in out.stdout, out.stdout
    # merged: each input's records keep theirs; past MAX_INPUTS_THREADS_APART
    # inputs, a group of threads sums them
    two = merge_profiles([data, data])
    assert sorted(_allocated(t["memory"], "_worker_alloc") for t in two.threads) == [
        0, 0, _allocated(whole, "_worker_alloc"), _allocated(whole, "_worker_alloc")]
    many = merge_profiles([data] * (MAX_INPUTS_THREADS_APART + 1))
    (group,) = [t for t in many.threads if "worker" in t["name"]]
    assert _allocated(group["memory"], "_worker_alloc") == (
        (MAX_INPUTS_THREADS_APART + 1) * _allocated(whole, "_worker_alloc"))
    # a file whose thread records keep no memory (an older fastprof's) says so
    for t in data.threads:
        del t["memory"]
    from fastprof.data.profile_file import write_profile
    write_profile(str(tmp_path / "old.prof"), data)
    out = _view("--memory", "--thread", "worker-b", "old.prof", cwd=tmp_path)
    assert out.returncode == 2 and "keeps no memory per thread" in out.stderr, out.stderr


CHILD = """\
def child_work():
    return [bytearray(1000) for _ in range(300)]

kept = child_work()
"""


def test_subprocesses_sum_every_process_memory(program, tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    program.write_text(PROGRAM + "import subprocess, sys\n"
                       "subprocess.run([sys.executable, 'child.py'], check=True)\n")
    out = _run("--memory", "--subprocesses", "-o", "all.prof", str(program), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "merged 1 child process" in out.stderr
    from fastprof.profile_file import load_profile
    data = load_profile(str(tmp_path / "all.prof"))
    child = _row(data.memory, "child_work")
    assert 300 * 1000 <= child.allocated_incl < 300 * 1300, child
    assert 3 * MB <= _row(data.memory, "churn").allocated < 3 * MB + 1000  # the parent's
    # each process's own file keeps its own memory; the totals are their sum
    files = sorted((tmp_path / "all.prof.processes").iterdir())
    parts = [load_profile(str(f)) for f in files]
    assert sorted(any(k[2] == "child_work" for k in p.memory) for p in parts) == [False, True]
    assert data.memory_totals["allocations"] == sum(p.memory_totals["allocations"] for p in parts)
    printed = _run("--memory", "--subprocesses", str(program), cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    header = lines.index(next(line for line in lines if line.split()[:2] == ["allocated", "incl"]))
    assert any("child_work" in line for line in lines[header + 1:]), printed.stdout

def test_after_this_thread_stops_nothing_is_a_row():
    import fastprof

    def small():
        return bytearray(100)

    prof = fastprof.Profile(memory=True)
    prof.enable()
    small()
    prof.disable(this_thread=True)
    big = bytearray(10 * MB)
    prof.disable()
    del big
    rows = prof.memory_stats()
    assert _row(rows, "small").allocated >= 100
    assert all(row.allocated < MB for row in rows.values()), rows


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                                     (10**6, "977 KiB"), (80 * 10**6, "76.3 MiB"),
                                     (-2048, "-2.0 KiB"), (3 * 2**40, "3.0 TiB")])
def test_format_bytes(n, text):
    from fastprof.tools.view import format_bytes
    assert format_bytes(n) == text
