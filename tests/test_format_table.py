"""formats.FORMAT_TABLE is the one list of output formats: every help text
that lists formats lists exactly the table's (none it lacks, none missing),
one export looks its format up once, and every route to a pstats file
writes through the one writer (profile_file.write_profile and the maker of
a file's bytes, file_parts)."""

import contextlib
import io
import marshal
import os
import re
import sys

import pytest

from fastprof import cli, exports
from fastprof.commands import convert
from fastprof.data import formats, profile_file
from fastprof.data.profile_file import CallPaths, ProfileData, load_profile
from fastprof.modes import pytest_plugin, run_command, run_options

TABLE = formats.FORMAT_TABLE
# what each kind of list must hold, from the rows themselves
ALL = {row.name for row in TABLE}
TREE = {row.name for row in TABLE if row.tree}
FOLDED = {row.name for row in TABLE if row.folded}
FILE_NAMES = {s for row in TABLE for s in row.suffixes} | {p + "*" for row in TABLE for p in row.prefixes}


def items(listed):
    """'a, b and c' / 'a, b or c' / 'a, b, c' -> {'a', 'b', 'c'}."""
    return set(re.split(r", | and | or ", listed.strip()))


@contextlib.contextmanager
def unwrapped():
    """Help texts with no line wrapped (argparse and optparse take the width
    from COLUMNS)."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100000"
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def one_line_help(make_parser):
    with unwrapped():  # (optparse reads the width when the parser is made)
        return make_parser().format_help()


def command_help(name=None):
    """``fastprof --help`` or ``fastprof NAME --help``, unwrapped."""
    if name is None:
        return one_line_help(cli.build_parser)
    out = io.StringIO()
    with unwrapped(), contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.build_parser().parse_args([name, "--help"])
    return out.getvalue()


def found(pattern, text):
    m = re.search(pattern, text)
    assert m, "no %r in the help:\n%s" % (pattern, text)
    return items(m.group(1))


# -- help texts ------------------------------------------------------------------

RUN_HELPS = {"python -m fastprof": lambda: one_line_help(run_command.build_parser),
             "fastprof attach": lambda: command_help("attach"),
             "fastprof top": lambda: command_help("top")}


@pytest.mark.parametrize("where", sorted(RUN_HELPS))
def test_run_options_list_the_tree_and_folded_formats(where):
    text = RUN_HELPS[where]()
    assert found(r"--callpaths\s.*?a format drawn from it: ([^)]*)\)", text) == TREE
    assert found(r"--min-percent[ =]P\s+(.*?) output:", text) == FOLDED


@pytest.mark.parametrize("where", ["python -m fastprof", "fastprof attach"])
def test_to_lists_every_format(where):
    text = RUN_HELPS[where]()
    assert found(r"--to[ =]FORMAT\s+with -o, write this format whatever the name: one of (.*)", text) == ALL


@pytest.mark.parametrize("name", ["convert", "merge"])
def test_convert_and_merge_list_every_format(name):
    text = command_help(name)
    assert found(r"--to FORMAT\s+output format: (.*?) \(default", text) == ALL
    if name == "convert":
        assert found(r"--min-percent P\s+(.*?) output:", text) == FOLDED
        assert items(convert.HELP.split(": ", 1)[1]) == ALL
        assert found(r"\n\s+convert\s+write a profile in another format: (.*)", command_help()) == ALL


def test_pytest_fastprof_lists_every_file_name():
    class Group:
        def __init__(self):
            self.helps = {}

        def addoption(self, *names, **kwargs):
            self.helps[names[0]] = kwargs.get("help", "")

    class Parser:
        group = Group()

        def getgroup(self, *args, **kwargs):
            return self.group

    parser = Parser()
    pytest_plugin.pytest_addoption(parser)
    text = parser.group.helps["--fastprof"]
    assert found(r"in the format its name asks for \((.*?); pstats for any other name\)", text) == FILE_NAMES


def test_said_lists_as_the_helps_do():
    assert formats.said(["a"]) == "a"
    assert formats.said(["a", "b", "c"]) == "a, b and c"
    assert formats.said(("a", "b"), "or") == "a or b"


# -- one look-up per export ------------------------------------------------------

class Lookups:
    """Counts the look-ups of a format: by name (BY_NAME) and by file name
    (row_for_name's walk of FORMAT_TABLE; the help texts walk it too)."""

    def __init__(self, monkeypatch):
        self.count = 0
        counter = self

        class ByName(dict):
            def get(self, *args):
                counter.count += 1
                return dict.get(self, *args)

        class Table(tuple):
            def __iter__(self):
                if sys._getframe(1).f_code.co_name == "row_for_name":
                    counter.count += 1
                return tuple.__iter__(self)

        monkeypatch.setattr(formats, "BY_NAME", ByName(formats.BY_NAME))
        monkeypatch.setattr(formats, "FORMAT_TABLE", Table(formats.FORMAT_TABLE))


def small_profile():
    key = ("m.py", 1, "f")
    return ProfileData({key: (1, 1, 0.5, 0.5, {})}, callpaths=CallPaths([key], [(-1, 0, 1, 0.5, 0.5)]))


@pytest.mark.parametrize("name, fmt", [("out.html", None), ("out.any", "collapsed"), ("out.prof", None),
                                       ("out.pb.gz", "pprof")])
def test_export_looks_its_format_up_once(tmp_path, monkeypatch, name, fmt):
    data = small_profile()
    lookups = Lookups(monkeypatch)
    exports.export(data, str(tmp_path / name), fmt)
    assert lookups.count == 1


def test_render_and_write_output_look_the_format_up_once(tmp_path, monkeypatch, capsys):
    data = small_profile()
    lookups = Lookups(monkeypatch)
    exports.render(data, "speedscope")
    assert lookups.count == 1
    exports.render_bytes(data, "pstats")
    assert lookups.count == 2
    run_options.write_output(data, str(tmp_path / "x.html"), "html")
    assert lookups.count == 3
    run_options.write_output(data, "-", "collapsed")
    assert lookups.count == 4
    row = run_options.output_row(str(tmp_path / "y.callgrind"))
    assert lookups.count == 5
    run_options.write_output(data, str(tmp_path / "y.callgrind"), row)  # the row passed along
    assert lookups.count == 5


@pytest.mark.parametrize("args", [["convert", "IN", "-o", "OUT.html"], ["convert", "IN", "--to", "gecko", "-o", "OUT"],
                                  ["merge", "IN", "IN", "-o", "OUT.speedscope.json"]])
def test_convert_and_merge_look_the_format_up_once(tmp_path, monkeypatch, capsys, args):
    profile_file.write_profile(str(tmp_path / "in.prof"), small_profile())
    args = [a.replace("IN", str(tmp_path / "in.prof")).replace("OUT", str(tmp_path / "out")) for a in args]
    lookups = Lookups(monkeypatch)
    assert cli.main(args) == 0
    assert lookups.count == 1


# -- one writer of pstats output -------------------------------------------------

def test_every_pstats_route_writes_the_same_bytes_through_one_maker(tmp_path, monkeypatch, capsys):
    import fastprof
    prof = fastprof.Profile(callpaths=True)
    prof.runcall(sorted, [3, 1, 2])
    data = prof.profile_data()
    made = []
    real = profile_file.file_parts
    monkeypatch.setattr(profile_file, "file_parts", lambda *a, **k: made.append(1) or real(*a, **k))

    profile_file.write_profile(str(tmp_path / "writer.prof"), data)
    routes = {
        "dump_stats": lambda p: prof.dump_stats(p),
        "export": lambda p: exports.export(data, p),
        "export --to pstats": lambda p: exports.export(data, p, "pstats"),
        "write_output": lambda p: run_options.write_output(data, p, "pstats"),
        "convert": lambda p: cli.main(["convert", str(tmp_path / "writer.prof"), "-o", p]),
    }
    reference = (tmp_path / "writer.prof").read_bytes()
    for name, route in routes.items():
        path = str(tmp_path / (name.replace(" ", "_") + ".prof"))
        route(path)
        if name not in ("dump_stats", "convert"):  # (made anew, or read and written again:
            assert open(path, "rb").read() == reference, name  # marshal's references differ)
        assert load_profile(path).stats == data.stats, name
        assert load_profile(path).trailer() == data.trailer(), name
    assert exports.render_bytes(data, "pstats") == reference
    # each write made its bytes once, by file_parts; per-test's C fast path too
    assert len(made) == 1 + len(routes) + 1
    table = marshal.dumps(data.stats)
    assert profile_file.file_bytes(table, data) == reference
    assert len(made) == 1 + len(routes) + 2
