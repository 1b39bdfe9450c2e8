"""The .prof file's trailer: a one-thread profile holds its rows once
(``stats_of_file``, issue 23 item 5), and reads back exactly as before;
files written the old way (the thread's stats spelled out) read the same."""
import io
import marshal
import pstats
import threading

import pytest

from helpers import USING_CPROFILE

if USING_CPROFILE:
    pytest.skip("fastprof's file format", allow_module_level=True)

from fastprof.data.profile_file import (  # noqa: E402
    MEMORY_OF_FILE,
    STATS_OF_FILE,
    ProfileData,
    load_profile,
    write_profile,
)


def work(n):
    return sum(i * i for i in range(n))


def recorded(run_thread=False, callpaths=True, memory=False):
    """A real profile (threads=True) of work(), in one thread or two."""
    import fastprof
    prof = fastprof.Profile(threads=True, callpaths=callpaths, memory=memory)
    prof.enable()
    work(200)
    if run_thread:
        t = threading.Thread(target=work, args=(300,))
        t.start()
        t.join()
    prof.disable()
    return prof.profile_data()


def raw_parts(path):
    """(pstats table, trailer dict) as marshal reads them."""
    with open(str(path), "rb") as f:
        stats = marshal.load(f)
        trailer = marshal.load(f)
    return stats, trailer


def old_style_bytes(data):
    """The file as written before stats_of_file: every thread's stats spelled out."""
    trailer = data.trailer()
    trailer["threads"] = [dict(t) for t in data.threads]
    return marshal.dumps(data.stats) + marshal.dumps(trailer)


@pytest.mark.parametrize("callpaths", [False, True])
def test_one_thread_is_written_once_and_read_back_the_same(tmp_path, callpaths):
    data = recorded(callpaths=callpaths)
    assert len(data.threads) == 1 and data.threads[0]["stats"] == data.stats
    new, old = tmp_path / "new.prof", tmp_path / "old.prof"
    write_profile(str(new), data)
    old.write_bytes(old_style_bytes(data))
    stats, trailer = raw_parts(new)
    assert stats == data.stats  # the pstats part is unchanged
    (record,) = trailer["threads"]
    assert "stats" not in record and record[STATS_OF_FILE] is True
    assert {k: v for k, v in record.items() if k != STATS_OF_FILE} == {
        k: v for k, v in data.threads[0].items() if k != "stats"}
    # the rows are there once: the file is smaller by about the table's size
    saved = old.stat().st_size - new.stat().st_size
    assert saved > 0.6 * len(marshal.dumps(data.stats)), (saved, len(marshal.dumps(data.stats)))
    got, got_old = load_profile(str(new)), load_profile(str(old))
    assert got == data
    assert got_old == data
    # its own table, not the file's: changing one leaves the other
    assert got.threads[0]["stats"] is not got.stats
    # pstats reads the table as before
    assert pstats.Stats(str(new), stream=io.StringIO()).stats == pstats.Stats(
        str(old), stream=io.StringIO()).stats


@pytest.mark.parametrize("run_thread", [False, True])
def test_one_threads_memory_is_written_once(tmp_path, run_thread):
    data = recorded(run_thread=run_thread, memory=True)
    assert data.memory and all(t["memory"] for t in data.threads)
    path = tmp_path / "p.prof"
    write_profile(str(path), data)
    _stats, trailer = raw_parts(path)
    if run_thread:  # two threads: each its own rows
        assert all("memory" in t and MEMORY_OF_FILE not in t for t in trailer["threads"])
    else:
        (record,) = trailer["threads"]
        assert "memory" not in record and record[MEMORY_OF_FILE] is True
    got = load_profile(str(path))
    assert got.memory == data.memory and got.threads == data.threads
    assert got.threads[0]["memory"] is not got.memory


def test_two_threads_keep_their_stats(tmp_path):
    data = recorded(run_thread=True)
    assert len(data.threads) == 2
    path = tmp_path / "p.prof"
    write_profile(str(path), data)
    _stats, trailer = raw_parts(path)
    assert all("stats" in t and STATS_OF_FILE not in t for t in trailer["threads"])
    assert load_profile(str(path)) == data


def test_one_thread_with_other_stats_keeps_them(tmp_path):
    key, other = ("a.py", 1, "f"), ("a.py", 9, "g")
    data = ProfileData({key: (1, 1, 0.5, 0.5, {}), other: (2, 2, 0.1, 0.1, {key: (2, 2, 0.1, 0.1)})},
                       threads=[{"id": 0, "ident": 7, "name": "MainThread",
                                 "stats": {key: (1, 1, 0.5, 0.5, {})}}])
    path = tmp_path / "p.prof"
    write_profile(str(path), data)
    _stats, trailer = raw_parts(path)
    assert trailer["threads"][0]["stats"] == {key: (1, 1, 0.5, 0.5, {})}
    assert load_profile(str(path)) == data


def test_merge_of_one_thread_files_sums_the_threads(tmp_path):
    from fastprof.tools.merge import merge_profiles
    data = recorded()
    path = tmp_path / "p.prof"
    write_profile(str(path), data)
    merged = merge_profiles([load_profile(str(path)), load_profile(str(path))])
    assert [t["stats"] for t in merged.threads] == [data.stats, data.stats]
    assert merged.stats == {k: (2 * v[0], 2 * v[1], 2 * v[2], 2 * v[3],
                                {c: tuple(2 * x for x in e) for c, e in v[4].items()})
                            for k, v in data.stats.items()}


def fastprof_cli(*args):
    import subprocess
    import sys

    from helpers import cli_env
    r = subprocess.run([sys.executable, "-m", "fastprof.cli"] + [str(a) for a in args],
                       capture_output=True, text=True, env=cli_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_commands_read_a_one_thread_file_as_the_old_one(tmp_path):
    """view --thread, diff and the exports show the same for the file
    written once and the file written the old way."""
    data = recorded()
    (tmp_path / "new").mkdir()
    (tmp_path / "old").mkdir()
    new, old = tmp_path / "new" / "p.prof", tmp_path / "old" / "p.prof"
    write_profile(str(new), data)
    old.write_bytes(old_style_bytes(data))
    for args in (["view", "--thread", "MainThread", "-n", "5"], ["view", "-n", "5"]):
        shown = fastprof_cli(*(args + [new]))
        assert "work" in shown, shown
        assert shown.replace(str(new), "X") == fastprof_cli(*(args + [old])).replace(str(old), "X")
    assert "work" not in fastprof_cli("diff", old, new)  # no change in any function
    for name in ("a.speedscope.json", "a.collapsed"):
        fastprof_cli("convert", new, "-o", new.parent / name)
        fastprof_cli("convert", old, "-o", old.parent / name)
        assert (new.parent / name).read_bytes() == (old.parent / name).read_bytes()
