"""The ``fastprof`` command is built from the modules of fastprof.commands,
one per subcommand, each keeping the protocol its package docstring states
(NAME, HELP, add_arguments, run): cli.py lists them all, ``--help`` shows
each, an error is one line with exit status 2, and ``fastprof run`` goes
to ``python -m fastprof`` before any parser is built."""

import argparse
import os
import pkgutil
import subprocess
import sys

import pytest

import fastprof
import fastprof.commands
from fastprof import cli
from fastprof.commands import arguments
from fastprof.commands import attach as attach_command
from fastprof.commands import top as top_command

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
# the modules of the wing that are not subcommands: what the commands share
SHARED = {"arguments", "profile_io"}


def run_cli(*args, cwd=None):
    env = dict(os.environ, COLUMNS="100")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PKG_PARENT, env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, "-m", "fastprof.cli"] + [str(a) for a in args], cwd=cwd,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def command_names():
    return sorted(m.name for m in pkgutil.iter_modules(fastprof.commands.__path__) if m.name not in SHARED)


def test_cli_lists_every_command_module_once_by_its_name():
    names = [c.NAME for c in cli.COMMANDS]
    assert sorted(names) == command_names()  # a new module not listed fails here
    assert len(set(names)) == len(names)
    for command in cli.COMMANDS:
        assert command.__name__ == "fastprof.commands." + command.NAME
        assert command.HELP and "\n" not in command.HELP
        assert callable(command.add_arguments) and callable(command.run)


def test_top_level_help_shows_each_commands_help_line():
    rc, out, err = run_cli("--help")
    assert rc == 0 and err == ""
    flat = " ".join(out.split())  # (help lines wrap)
    for command in cli.COMMANDS:
        assert "%s %s" % (command.NAME, " ".join(command.HELP.split())) in flat, command.NAME


@pytest.mark.parametrize("name", [n for n in command_names() if n != "run"])
def test_each_command_help_has_its_description_and_epilog(name):
    rc, out, err = run_cli(name, "--help")
    assert rc == 0 and err == ""
    assert out.startswith("usage: fastprof %s" % name)
    flat = " ".join(out.split())
    command = getattr(fastprof.commands, name)
    for text in (getattr(command, "DESCRIPTION", None), getattr(command, "EPILOG", None)):
        if text:
            assert " ".join(text.split()) in flat
    if name in ("attach", "top"):  # declared by their run mode
        assert "examples:" in out and "--duration" in out if name == "attach" else "keys:" in out


def test_attach_and_top_help_lines_are_their_run_modes():
    from fastprof.modes import attach, top
    for command, mode in ((attach_command, attach), (top_command, top)):
        stand_in = arguments.ModeParser(argparse.ArgumentParser())
        parser = mode.add_parser(stand_in, argparse.HelpFormatter)
        assert parser is stand_in.parser
        assert stand_in.help == command.HELP, command.NAME
        assert parser.description and parser.epilog


def test_a_mode_parser_refuses_settings_it_cannot_put_on_the_parser():
    stand_in = arguments.ModeParser(argparse.ArgumentParser())
    with pytest.raises(TypeError, match="aliases"):
        stand_in.add_parser("x", help="h", aliases=["y"])


@pytest.mark.parametrize("args", [["view", "--limit", "x", "f.prof"], ["diff", "a.prof"],
                                  ["check", "a", "b", "--tolerance", "-3"], ["merge", "a.prof"],
                                  ["convert", "a.prof"], ["top", "--interval"], ["attach"]])
def test_parser_errors_exit_2_with_one_error_line(args):
    rc, out, err = run_cli(*args)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("usage: fastprof %s" % args[0])
    assert [line for line in lines if "error:" in line] == [lines[-1]]
    assert lines[-1].startswith("fastprof %s: error: " % args[0])


@pytest.mark.parametrize("args", [["view", "missing.prof"], ["diff", "missing.prof", "missing.prof"],
                                  ["check", "missing.prof", "missing.prof"],
                                  ["merge", "missing.prof", "-o", "out.prof"],
                                  ["convert", "missing.prof", "-o", "out.html"],
                                  ["convert", "missing.prof", "-o", "-"],
                                  ["attach", "not-a-pid"], ["top", "not-a-pid"]])
def test_run_errors_are_one_line_exit_2(tmp_path, args):
    rc, out, err = run_cli(*args, cwd=str(tmp_path))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("fastprof %s: error: " % args[0]), err


def test_a_query_that_matches_nothing_exits_1(tmp_path):
    import cProfile
    prof = cProfile.Profile()
    prof.runcall(sorted, [2, 1])
    prof.dump_stats(str(tmp_path / "p.prof"))
    rc, out, err = run_cli("view", tmp_path / "p.prof", "--callers", "no_such_function")
    assert rc == 1 and out == ""
    assert err == "fastprof view: no function matches /no_such_function/ (in %s)\n" % (tmp_path / "p.prof")


LIGHT = """\
import sys; sys.path.insert(0, {path!r})
before = set(sys.modules)
import fastprof.cli
import fastprof.commands.{name}
print(" ".join(sorted(m for m in set(sys.modules) - before if not m.startswith("fastprof"))))
"""


@pytest.mark.parametrize("name", command_names())
def test_command_modules_import_nothing_up_front(name):
    # fastprof run imports them all before the program: no argparse, re, typing...
    r = subprocess.run([sys.executable, "-I", "-c", LIGHT.format(path=PKG_PARENT, name=name)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == []


def test_run_goes_to_python_m_fastprof_before_any_parser(monkeypatch):
    from fastprof.modes import run_command
    seen = []
    monkeypatch.setattr(run_command, "main", lambda argv: seen.append(argv) or 7)
    monkeypatch.setattr(cli, "build_parser", lambda: pytest.fail("a parser was built for run"))
    assert cli.main(["run", "--help", "-o", "x.prof"]) == 7
    assert seen == [["--help", "-o", "x.prof"]]
