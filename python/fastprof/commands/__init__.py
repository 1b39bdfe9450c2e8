"""The subcommands of the ``fastprof`` command, one module each:
``fastprof view ...`` runs view.py.  cli.py builds the top parser from
their list and dispatches; a new subcommand is a module here and a name in
that list.

The protocol: each command module declares

- ``NAME``: the subcommand, ``fastprof NAME ...``;
- ``HELP``: its one line in ``fastprof --help``;
- ``DESCRIPTION`` and ``EPILOG`` (optional): the text before and after its
  options in ``fastprof NAME --help`` (unindented lines wrapped to the
  terminal as paragraphs, indented ones kept as written: tables, examples);
- ``add_arguments(parser)``: declare its arguments on the argparse parser
  cli.py made for it;
- ``run(args) -> int``: run with the parsed arguments; return the exit
  status.  A mistake in the input raises ``UsageError`` (modes.run_options)
  or ``ProfileFileError``: cli.py reports it as one line, exit status 2.

``run`` parses its own command line (``python -m fastprof``'s): it sets
``OWN_COMMAND_LINE = True`` and its ``run`` gets the arguments after its
name, unparsed.  attach and top are run modes: their parsers and code stay
in modes/attach.py and modes/top.py, which these modules delegate to.

What they may import: the wings below (modes, exports, recording, tools,
data); never cli.py (above them) or each other (their shared parts are
arguments.py, the argument types and checks, and profile_io.py, the inputs
read and outputs written).  ``fastprof run`` imports every command module
before the program starts, so up front they import only os, sys,
data.formats and modes.run_options; the rest, argparse included, when
their functions run.
"""
