"""Both command lines take the same ``-o`` names and ``--to`` formats, with
the same outcome: ``python -m fastprof -o NAME script.py`` and ``fastprof
convert/merge in.prof -o NAME`` write the same format, or fail with the
same one-line error (formats.FORMAT_TABLE is the one list of formats)."""

import gzip
import marshal
import os
import subprocess
import sys
import textwrap

import pytest

import fastprof
from fastprof import cli
from fastprof.data import formats

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))

WORK = """\
def leaf(n):
    return sum(range(n))

def main():
    for i in range(20):
        leaf(i)

main()
"""


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (PKG_PARENT, e.get("PYTHONPATH")) if p)
    e.pop("PYTHONSTARTUP", None)
    return e


def sniff(data):
    """The format of a written profile, from its bytes."""
    if data[:2] == b"\x1f\x8b":  # gzip: pprof's profile.proto
        body = gzip.decompress(data)
        assert body[:1] == b"\x0a"  # field 1 (sample_type), length-delimited
        return "pprof"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        head = text.lstrip()[:200].lower()
        if head.startswith(("<!doctype html", "<html")):
            return "html"
        if head.startswith("{") and "speedscope" in text[:500]:
            return "speedscope"
        if head.startswith('{"meta":') and "preprocessedProfileVersion" in text[:2000]:
            return "gecko"
        if any(line.startswith("events:") for line in text.splitlines()[:20]):
            return "callgrind"
        lines = [ln for ln in text.splitlines() if ln]
        if lines and all(ln.rsplit(" ", 1)[-1].isdigit() for ln in lines):
            return "collapsed"
    assert isinstance(marshal.loads(data), dict)
    return "pstats"


def outcome_run(tmp_path, name, to):
    """(status, format written or error message) of python -m fastprof."""
    args = [sys.executable, "-m", "fastprof"] + (["--to", to] if to else []) + ["-o", name, "work.py"]
    r = subprocess.run(args, cwd=str(tmp_path), env=env(), timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return _outcome(tmp_path, name, r.returncode, r.stdout, r.stderr.decode(),
                    "python -m fastprof: error: ")


def outcome_tool(tmp_path, capsysbinary, command, name, to):
    """The same for ``fastprof convert/merge in.prof``."""
    capsysbinary.readouterr()
    args = [command, str(tmp_path / "in.prof"), "-o", name] + (["--to", to] if to else [])
    cwd = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        status = cli.main(args)
    finally:
        os.chdir(cwd)
    out, err = capsysbinary.readouterr()
    return _outcome(tmp_path, name, status, out, err.decode(), "fastprof %s: error: " % command)


def _outcome(tmp_path, name, status, stdout, stderr, prefix):
    if status != 0:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix), stderr
        return status, lines[0][len(prefix):]
    if name == "-":
        return status, sniff(stdout)
    path = tmp_path / name
    fmt = sniff(path.read_bytes())
    path.unlink()
    return status, fmt


def _names():
    names = []
    for row in formats.FORMAT_TABLE:
        names += ["out" + s for s in row.suffixes] + [p + ".7" for p in row.prefixes]
    # names no format claims: pstats, as cProfile writes any name
    return names + ["out.fprof", "out.txt", "restats", "out.svg", "OUT.HTML"]


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    (d / "work.py").write_text(textwrap.dedent(WORK))
    r = subprocess.run([sys.executable, "-m", "fastprof", "--callpaths", "-o", "in.prof", "work.py"],
                       cwd=str(d), env=env(), timeout=120)
    assert r.returncode == 0
    return d


CASES = ([(name, None) for name in _names()] +
         [("out.any", fmt) for fmt in formats.FORMATS] +
         [("-", fmt) for fmt in formats.FORMATS if fmt != "pstats"] +
         [("out.prof", "svg"), ("-", None), ("no/such/dir/x.prof", None)])


@pytest.mark.parametrize("name, to", CASES)
def test_both_command_lines_agree(work_dir, capsysbinary, name, to):
    expected = formats.format_for_name(name) or "pstats" if name != "-" else to
    run = outcome_run(work_dir, name, to)
    for command in ("convert", "merge"):
        assert outcome_tool(work_dir, capsysbinary, command, name, to) == run, command
    if to == "svg":
        assert run == (2, "unknown format 'svg'; known formats: " + ", ".join(formats.FORMATS))
    elif name == "-" and to is None:
        assert run[0] == 2 and "needs --to FORMAT" in run[1]
    elif name.startswith("no/"):
        assert run[0] == 2 and "does not exist" in run[1]
    else:
        assert run == (0, to or expected)


def test_neither_overwrites_its_input(work_dir, capsysbinary):
    # python -m fastprof's input is the script; convert's and merge's the profile
    assert outcome_run(work_dir, "work.py", None) == (
        2, "refusing to overwrite the input file work.py")
    for command in ("convert", "merge"):
        assert outcome_tool(work_dir, capsysbinary, command, "in.prof", None) == (
            2, "refusing to overwrite the input file %s" % (work_dir / "in.prof"))


def test_help_of_both_lists_every_format_name():
    text = formats.formats_help()
    for row in formats.FORMAT_TABLE:
        for n in (row.name,) + row.suffixes + row.prefixes:
            assert n in text
    r = subprocess.run([sys.executable, "-m", "fastprof", "--help"], env=env(),
                       stdout=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert text.splitlines()[1] in r.stdout
    for command in ("convert", "merge", "attach"):
        r = subprocess.run([sys.executable, "-m", "fastprof.cli", command, "--help"], env=dict(env(), COLUMNS="100"),
                           stdout=subprocess.PIPE, universal_newlines=True, timeout=60)
        # the table as written (its prose lines wrapped to the terminal)
        for line in text.splitlines():
            if line.startswith("  "):
                assert line in r.stdout, (command, line)
