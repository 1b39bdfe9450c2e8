"""IPython / Jupyter: ``%load_ext fastprof``, then ``%fastprof`` and ``%%fastprof``.

    %fastprof [options] statement      profile one statement
    %%fastprof [options]               profile the whole cell

The options are ``python -m fastprof``'s (run_command.build_parser(), without
-m): ``-s`` sorts the printed table, ``-o FILE`` writes the profile instead
(format by the name), ``--no-threads``, ``--clock cpu``... The code runs
in the user's namespace. In a front end that shows HTML (Jupyter) the
profile is also drawn inline as fastprof's HTML report; a terminal gets the
table only. If the code raises, its traceback is shown, then the profile
of what ran; the magic returns None either way (Ctrl-C still interrupts).

Imported only by ``load_ipython_extension`` (IPython is imported then).
"""

import html
import os
import re

from ..data import formats
from . import run_command, run_options
from .run_options import UsageError

MAGIC = "fastprof"
USAGE = ("%%%s [options] statement\n   or: %%%%%s [options]   (the cell below is profiled)"
         % (MAGIC, MAGIC))
DESCRIPTION = """\
Profile a statement (%fastprof) or a whole cell (%%fastprof) with fastprof,
in the notebook's namespace, then print its profile (a pstats table, as
python -m fastprof prints) or, with -o, write it to a file. Where the front
end shows HTML (Jupyter), the HTML report is also shown below the output."""
EXAMPLES = """\
examples:
  %load_ext fastprof
  %fastprof main()
  %fastprof -s tottime sorted(data, key=str)
  %%fastprof --no-threads -o cell.prof
  for x in data:
      work(x)"""
# the one option of python -m fastprof that means nothing here
NOT_HERE = ("-m",)
# a token of the magic's line: a quoted string or a run of non-blanks
_TOKEN = re.compile(r"""\s*("[^"]*"|'[^']*'|\S+)""")


def build_parser():
    """python -m fastprof's parser, for the magic."""
    p = run_command.build_parser()
    for opt in NOT_HERE:
        p.remove_option(opt)
    p.prog = "%" + MAGIC
    p.usage = USAGE
    p.description = DESCRIPTION
    p.epilog = formats.formats_help() + "\n" + EXAMPLES
    p.get_option("-o").help = ("write the profile to FILE instead of printing its table; "
                               "the format follows the file name (see below), pstats for "
                               "any name not listed")
    return p


def split_line(parser, line):
    """(option words, statement text) of a magic's line: the options end at
    the first word that is not one (or after '--'); the statement is the rest
    of the line as written."""
    import shlex
    words = []
    pos = 0
    want_value = False
    while True:
        m = _TOKEN.match(line, pos)
        if m is None:
            break
        token = m.group(1)
        if want_value:
            words.append(shlex.split(token)[0] if token[0] in "'\"" else token)
            want_value = False
        elif token == "--":
            pos = m.end()
            break
        elif token.startswith("-") and len(token) > 1 and not token[1].isdigit():
            words.append(token)
            want_value = _takes_value(parser, token)
        else:
            break
        pos = m.end()
    return words, line[pos:].strip()


def _takes_value(parser, token):
    """True if option *token* (without '=value') needs the next word."""
    if token.startswith("--"):
        if "=" in token:
            return False
        try:
            name = parser._match_long_opt(token)  # optparse's own abbreviation rule
        except Exception:
            return False  # the parser reports it
        return parser._long_opt[name].takes_value()
    opt = parser._short_opt.get(token[:2])
    return opt is not None and opt.takes_value() and len(token) == 2


def parse(parser, words):
    """The options of the magic, checked as python -m fastprof checks them."""
    options, extra = parser.parse_args(words)
    if extra:
        raise UsageError("unrecognized arguments: %s" % " ".join(extra))
    options.sort = (run_options.parse_cprofile_sort(options.sort)
                    if options.sort is not None else run_command.DEFAULT_SORT)
    run_options.check_run_options(options)
    if options.to is not None and options.outfile is None:
        raise UsageError("--to needs -o FILE")
    options.fmt = None
    if options.outfile is not None:
        if options.outfile == run_options.STDOUT:
            raise UsageError("-o - (stdout) is for the command line; give a file name")
        options.fmt = run_options.output_format(options.outfile, options.to)
        run_options.check_output_path(options.outfile)
    return options


def shows_html(shell):
    """True if the front end displays HTML (Jupyter; not a terminal IPython,
    which keeps only text/plain)."""
    formatter = getattr(shell, "display_formatter", None)
    if formatter is None or "text/html" not in formatter.active_types:
        return False
    html_formatter = formatter.formatters.get("text/html")
    return html_formatter is not None and html_formatter.enabled


class HTMLReport:
    """fastprof's HTML report, shown inline: an iframe keeps its styles and
    scripts apart from the notebook's."""

    HEIGHT = 620

    def __init__(self, document, title):
        self.document = document
        self.title = title

    def _repr_html_(self):
        return ('<iframe srcdoc="%s" title="%s" style="width:100%%;height:%dpx;border:1px '
                'solid #ccc" sandbox="allow-scripts"></iframe>'
                % (html.escape(self.document, quote=True), html.escape(self.title, quote=True),
                   self.HEIGHT))

    def __repr__(self):
        return "<fastprof HTML report: %s>" % self.title


class FastprofMagic:
    """The %fastprof / %%fastprof magic of one shell."""

    def __init__(self, shell):
        self.shell = shell
        self.parser = build_parser()

    def __call__(self, line, cell=None):
        from IPython.core.error import UsageError as IPythonUsageError
        try:
            words, statement = split_line(self.parser, line)
            try:
                options = parse(self.parser, words)
            except SystemExit:  # --help was printed
                return None
            if cell is not None:
                if statement:
                    raise UsageError("%%%%%s takes options only on its line, not %r"
                                     % (MAGIC, statement))
                source = cell
            elif not statement:
                raise UsageError("no statement to profile: %%%s [options] statement, "
                                 "or %%%%%s [options] above a cell" % (MAGIC, MAGIC))
            else:
                source = statement
        except UsageError as exc:
            raise IPythonUsageError("%%%s: %s" % (MAGIC, exc)) from None
        self.run(source, options)
        return None

    def run(self, source, options):
        from IPython.core.error import UsageError as IPythonUsageError
        shell = self.shell
        inline = options.outfile is None and shows_html(shell)
        callpaths = options.callpaths or inline or options.fmt in formats.TREE_FORMATS
        try:
            prof = run_options.new_profile(run_options.profile_options(options, callpaths))
        except UsageError as exc:  # --fast where it is not available
            raise IPythonUsageError("%%%s: %s" % (MAGIC, exc)) from None
        source = shell.transform_cell(source)
        filename = shell.compile.cache(source, shell.execution_count)  # the traceback shows the lines
        code = shell.compile(source, filename, "exec")
        ns = shell.user_ns
        error = None
        failures = []
        prof.enable()
        try:
            exec(code, ns, ns)
        except BaseException as exc:  # (no call here: it would be profiled)
            error = exc
        try:
            prof.disable()
        except Exception as err:
            failures.append(err)
        if error is not None:
            # from the user's code on: this frame is not theirs
            tb = error.__traceback__
            error.__traceback__ = tb.tb_next if tb is not None else None
            # (tb_offset=0: IPython 8 would skip one more frame by default)
            shell.showtraceback((type(error), error, error.__traceback__), tb_offset=0)
        self.report(prof, options, inline, failures)
        if isinstance(error, KeyboardInterrupt):
            raise error

    def report(self, prof, options, inline, failures):
        """End the run as python -m fastprof does (run_command.finish_profile)."""
        fmt = options.fmt if options.outfile is not None else None
        status = run_command.finish_profile(prof, options, fmt, failures, 0, prog="%" + MAGIC)
        if options.outfile is not None:
            if status == (1 if failures else 0):  # (else: it said why it could not write)
                print("%%%s: profile written to %s" % (MAGIC, os.path.abspath(options.outfile)))
            return
        if inline:
            from IPython.display import display  # optional dependency: IPython's, loaded by it

            from .. import exports  # (deferred: the HTML report's imports, for inline only)
            title = "%%%s profile" % MAGIC
            document = exports.render(prof.profile_data(), "html", title=title,
                                      min_percent=options.min_percent)
            display(HTMLReport(document, title))


def load(shell):
    """Register %fastprof / %%fastprof in *shell*."""
    from IPython.core.magic import no_var_expand
    magic = FastprofMagic(shell)

    @no_var_expand  # the statement is Python: {braces} and $ stay as written
    def fastprof(line, cell=None):
        return magic(line, cell)

    fastprof.__doc__ = magic.parser.format_help()
    shell.register_magic_function(fastprof, magic_kind="line_cell", magic_name=MAGIC)
