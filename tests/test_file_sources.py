"""Profile files are self-contained and checked (issue 23, item 4): the
source of line-profiled functions travels in the file, and a file cut short
inside fastprof's trailer is said to be, never read as a plain cProfile file."""
import marshal
import os
import shutil

import pytest

from helpers import USING_CPROFILE, run_python

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof's file format")

APP = '''\
def hot(n):
    total = 0
    for i in range(n):
        total += i * i  # the hot line
    return total


for _ in range(3):
    hot(2000)
'''


def record(tmp_path):
    """app.py profiled with --lines in rec/, written to elsewhere/; the
    source then deleted: the file is all that is left."""
    rec, elsewhere = tmp_path / "rec", tmp_path / "elsewhere"
    rec.mkdir()
    elsewhere.mkdir()
    (rec / "app.py").write_text(APP)
    r = run_python(["-m", "fastprof", "--lines", "app:hot", "-o", str(elsewhere / "app.prof"), "app.py"],
                   cwd=str(rec))
    assert r.returncode == 0, r.stderr
    shutil.rmtree(str(rec))
    return elsewhere / "app.prof"


def test_lines_listing_from_another_directory(tmp_path):
    prof = record(tmp_path)
    r = run_python(["-m", "fastprof.cli", "view", str(prof), "--lines"], cwd=str(prof.parent))
    assert r.returncode == 0, r.stderr
    assert "not found" not in r.stdout
    rows = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.strip()[:1].isdigit()}
    assert rows["1"].rstrip().endswith("def hot(n):")
    assert rows["4"].rstrip().endswith("total += i * i  # the hot line")
    assert " 6,000 " in rows["4"]  # its hits, beside its text


def test_html_report_shows_stored_source(tmp_path):
    prof = record(tmp_path)
    out = prof.parent / "app.html"
    r = run_python(["-m", "fastprof.cli", "convert", str(prof), "-o", str(out)], cwd=str(prof.parent))
    assert r.returncode == 0, r.stderr
    assert "total += i * i  # the hot line" in out.read_text()


def test_only_listed_lines_are_stored(tmp_path):
    from fastprof.data.profile_file import load_profile
    data = load_profile(str(record(tmp_path)))
    (filename, texts), = data.sources.items()
    assert filename == "app.py" or filename.endswith(os.sep + "app.py")
    assert sorted(texts) == [1, 2, 3, 4, 5]  # hot(): first line to its last with stats
    assert texts[3] == "    for i in range(n):"


def test_stored_text_wins_over_the_file_now(tmp_path):
    """A file read later shows the code as recorded, not the file as edited since."""
    from fastprof.data.profile_file import ProfileData, load_profile, write_profile
    src = tmp_path / "mod.py"
    src.write_text("def f():\n    return 1\n")
    key = (str(src), 1, "f")
    path = tmp_path / "p.prof"
    write_profile(str(path), ProfileData({key: (1, 1, 0.1, 0.1, {})}, lines={key: {2: (1, 0.1)}}))
    src.write_text("def f():\n    return 2  # edited\n")
    from fastprof.tools.line_view import function_listing
    data = load_profile(str(path))
    listing = "\n".join(function_listing(key, data.lines[key], sources=data.sources))
    assert "return 1" in listing and "edited" not in listing


def cut_points(path):
    raw = path.read_bytes()
    with open(str(path), "rb") as f:
        marshal.load(f)
        end = f.tell()  # the end of the pstats table
    assert end < len(raw)
    return raw, end


def test_file_cut_inside_the_trailer_warns(tmp_path):
    prof = record(tmp_path)
    raw, end = cut_points(prof)
    from fastprof.data.profile_file import load_profile
    whole = load_profile(str(prof))
    for cut in sorted({end + 1, end + 2, end + 9, end + 30, (end + len(raw)) // 2, len(raw) - 1}):
        part = tmp_path / ("cut%d.prof" % cut)
        part.write_bytes(raw[:cut])
        data = load_profile(str(part))
        assert data.damaged and "cut short" in data.damaged, cut
        assert data.stats == whole.stats and not data.lines
        r = run_python(["-m", "fastprof.cli", "view", str(part)])
        assert r.returncode == 0, r.stderr
        assert r.stderr.strip() == ("fastprof: warning: %s: fastprof data cut short (file truncated?); "
                                    "only the pstats table is read" % part), cut
        assert "hot" in r.stdout


def test_file_cut_at_the_end_of_the_pstats_table_is_a_cprofile_file(tmp_path):
    raw, end = cut_points(record(tmp_path))
    part = tmp_path / "plain.prof"
    part.write_bytes(raw[:end])
    from fastprof.data.profile_file import load_profile
    assert load_profile(str(part)).damaged is None
    r = run_python(["-m", "fastprof.cli", "view", str(part)])
    assert r.returncode == 0 and r.stderr == ""


def test_file_cut_inside_the_pstats_table_is_an_error(tmp_path):
    raw, end = cut_points(record(tmp_path))
    part = tmp_path / "short.prof"
    part.write_bytes(raw[:end - 5])
    r = run_python(["-m", "fastprof.cli", "view", str(part)])
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "cut short (file truncated?)" in r.stderr
