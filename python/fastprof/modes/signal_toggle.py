"""A dormant profiler switched on and off by a signal.

``python -m fastprof --signal SIG [--idle] -o FILE script.py`` and
``fastprof.install_signal_toggle(SIG, FILE)``. Each SIG toggles profiling;
each stop writes the profile collected so far (cumulative over all the
on-periods) to FILE, atomically, and the end of the program writes the
final one. POSIX signals: Linux only (Windows has no SIGUSR1).

How the pieces keep the profile clean and the program safe:

- The handler is a C callable (``Profile.toggled_by``: ``Profiler._toggle_with`` behind a
  ``functools.partial``): it stops the profiler before any Python code of
  ours runs, and starts it after the last of it, so no frame of the
  handler is recorded.
- The writing runs in the handler, on the main thread, while the profiler
  is off. A signal that comes during a write only flips the wanted state;
  the outer handler applies it when the write is done.
- Ctrl-C during a write is held back until the write is done (the file
  is complete), then acts as it would have (the program's SIGINT handler:
  KeyboardInterrupt by default); a write cut short anyway (a second
  Ctrl-C) leaves the previous file and its data for the next write.
- The program's own handler for SIG is refused: at install if it has one
  (anything but SIG_DFL / SIG_IGN), and later by a guard put in place of
  ``_signal.signal`` (which ``signal.signal`` calls, looking it up at each
  call): it raises ValueError for SIG and passes every other call through
  unchanged. The guard is taken out again by uninstall() and at exit.
"""

import os
import sys

from ..data import formats
from ..recording.profiler import Profile
from . import run_options
from .interrupts import CtrlC
from .run_options import UsageError

# signals a process cannot catch
_UNCATCHABLE = ("SIGKILL", "SIGSTOP")

# the toggle installed in this process, if any (one at a time: one profiler
# can own the interpreter's profiling hook)
_active = None


def parse_signal(value):
    """The number of a signal given as 'SIGUSR1', 'USR1' (any case), '10'
    or an int / signal.Signals; UsageError (a ValueError) if it is none or
    cannot be caught."""
    import signal
    if isinstance(value, bool):
        raise UsageError("not a signal: %r" % (value,))
    if isinstance(value, int):
        num = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            num = int(text)
        else:
            name = text.upper()
            if not name.startswith("SIG"):
                name = "SIG" + name
            sig = signal.Signals.__members__.get(name)
            if sig is None:
                raise UsageError("unknown signal %r (use a name such as SIGUSR1 or USR1, "
                                 "or a number)" % value)
            num = int(sig)
    else:
        raise UsageError("not a signal: %r" % (value,))
    if num not in signal.valid_signals():
        raise UsageError("not a valid signal number on this system: %d" % num)
    if signal_name(num) in _UNCATCHABLE:
        raise UsageError("%s cannot be caught by a process; use another signal "
                         "(SIGUSR1 or SIGUSR2 are meant for this)" % signal_name(num))
    return num


def signal_name(num):
    import signal
    try:
        return signal.Signals(num).name
    except ValueError:
        return "signal %d" % num


def _where(handler):
    """' (defined at file:line)' for a Python function handler, else ''."""
    code = getattr(getattr(handler, "__func__", handler), "__code__", None)
    if code is None:
        return ""
    return " (defined at %s:%d)" % (code.co_filename, code.co_firstlineno)


class SignalToggle:
    """Profiling switched on and off by a signal; made by
    ``fastprof.install_signal_toggle()`` or ``python -m fastprof --signal``.

    ``profiler`` is the ``fastprof.Profile`` collecting, ``filename`` the
    file each stop writes, ``writes`` how many times it was written.

    ``uninstall()`` takes the toggle out: it stops profiling (writing the
    profile if anything was collected since the last write), gives SIG its
    handler from before and ``signal.signal`` its original; calling it
    again does nothing. Like the handler, it is a C callable, so calling
    it while profiling adds no row to the profile.
    """

    def __init__(self, profiler, signum, filename, fmt, min_percent=None, prog="fastprof"):
        self.profiler = profiler
        self.signum = signum
        self.filename = filename
        self.format = fmt
        self.min_percent = min_percent
        self.writes = 0
        self._prog = prog
        self._pid = os.getpid()
        self.want_on = False     # what the signals asked for so far
        self._unwritten = False   # stats collected since the last write
        self._busy = False        # a write (or the final one) is running
        self.closing = False     # the program ended: a signal may stop, not start
        self._installed = False
        self._previous = None     # SIG's handler before ours
        self._original_signal = None
        self._at_exit_registered = False
        # called from C: no frame of it is recorded (see the module's doc)
        self._handler = profiler.toggled_by(self._on_signal)
        self.uninstall = profiler.toggled_by(self._uninstall)
        self._at_exit = profiler.toggled_by(self._final)

    def __repr__(self):
        return "<fastprof.SignalToggle %s -> %s, %s>" % (
            signal_name(self.signum), self.filename,
            "installed" if self._installed else "uninstalled")

    @property
    def installed(self):
        return self._installed

    # -- installing ------------------------------------------------------------

    def install(self, start):
        """Put the handler and the guard in place; *start*: profiling is
        (about to be) on, so the first signal stops it. The caller enables
        the profiler, as its very last call, so that nothing of this is
        recorded."""
        global _active
        import signal
        import threading
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("the signal toggle must be installed from the main thread "
                             "(only it runs signal handlers)")
        if _active is not None:
            raise ValueError("a signal toggle is already installed (%s); uninstall it first"
                             % signal_name(_active.signum))
        name = signal_name(self.signum)
        current = signal.getsignal(self.signum)
        if current is None:
            raise ValueError("%s has a handler not installed from Python; fastprof will not "
                             "replace it: use another signal" % name)
        if current not in (signal.SIG_DFL, signal.SIG_IGN):
            raise ValueError("%s already has a handler, %r%s; fastprof will not replace it: "
                             "use another signal for the profiling toggle"
                             % (name, current, _where(current)))
        import _signal
        original = _signal.signal
        try:
            original(self.signum, self._handler)
        except (OSError, ValueError) as exc:
            raise ValueError("cannot handle %s: %s" % (name, exc)) from None
        self._previous = current
        self._original_signal = original
        _signal.signal = self._guarded_signal
        self._installed = True
        self.want_on = bool(start)
        _active = self

    def _guarded_signal(self, signalnum, handler, /):
        """``_signal.signal`` while the toggle is installed: SIG is refused,
        every other call goes to the original unchanged."""
        if self._installed and _same_signal(signalnum, self.signum):
            raise ValueError(
                "%s is fastprof's profiling toggle; the program's own handler for it is "
                "refused: use another signal, or a different one for fastprof --signal"
                % signal_name(self.signum))
        return self._original_signal(signalnum, handler)

    def _uninstall(self, error, was_enabled):
        """uninstall(), once ``_toggle_with`` stopped the profiler."""
        if not self._installed or os.getpid() != self._pid:
            return False
        import threading
        if threading.current_thread() is not threading.main_thread():
            # signal handlers can be changed from the main thread only: the
            # toggle stays, stopped, with what it collected written
            self._stopped(error, was_enabled)
            self.want_on = False
            self._busy = True
            try:
                self._write_unwritten()
            finally:
                self._busy = False
            raise ValueError("uninstall() must be called from the main thread")
        self.begin_exit()
        ctrl_c = CtrlC(patience=None).start()
        try:
            self._stopped(error, was_enabled)
            self._write_unwritten()
        finally:
            ctrl_c.stop()
            self._take_out(self._previous)
            if self._at_exit_registered:
                import atexit
                atexit.unregister(self._at_exit)
                self._at_exit_registered = False
        self._ctrl_c_after_write(ctrl_c)
        return False

    def _stopped(self, error, was_enabled):
        if error is not None:
            self._report("profiling failed and stopped: %s: %s; the profile is partial"
                         % (type(error).__name__, error))
        if was_enabled:
            self._unwritten = True

    def _take_out(self, handler):
        """Restore ``_signal.signal``; set SIG's handler to *handler*."""
        global _active
        import _signal
        self._installed = False
        if _active is self:
            _active = None
        if _signal.signal == self._guarded_signal:
            _signal.signal = self._original_signal
        # else someone wrapped it after us: our guard stays, passing all through
        if isinstance(handler, int):
            handler = int(handler)  # _signal.signal takes no signal.Handlers enum
        try:
            self._original_signal(self.signum, handler)
        except (OSError, ValueError):  # pragma: no cover - not the main thread
            pass

    # -- the handler -------------------------------------------------------------

    def _on_signal(self, error, was_enabled, signum=None, frame=None):
        """Called by ``_toggle_with`` once the profiler is stopped; returns
        whether to start it again. Writes what the on-period collected."""
        if os.getpid() != self._pid or not self._installed:
            return False  # a fork child (the file is the parent's), or taken out
        self._stopped(error, was_enabled)
        self.want_on = not self.want_on
        if self._busy:
            return False  # the running write decides once it is done
        self._busy = True
        ctrl_c = CtrlC(patience=None).start()
        try:
            self._write_unwritten()
        finally:
            self._busy = False
            ctrl_c.stop()
        if ctrl_c.pressed:
            self.want_on = False  # the program is interrupted: off until SIG again
            self._ctrl_c_after_write(ctrl_c)
        if self.want_on and not self.closing:
            self.profiler.prepare_enable()
        # read last, with no call after it (no signal is handled between
        # this and the C enable): a signal handled meanwhile is counted
        return self.want_on and not self.closing

    def _write_unwritten(self):
        while self._unwritten:
            self._unwritten = False
            try:
                self._write()
            except BaseException:
                self._unwritten = True  # cut short: the next write has it all
                raise

    def _ctrl_c_after_write(self, ctrl_c, deliver=True):
        """A Ctrl-C held back during a write (*ctrl_c*): say so, then let it
        act as the program's SIGINT handler makes it (with *deliver*)."""
        if not ctrl_c.pressed:
            return
        self._report("Ctrl-C while %s was written: it was written first" % self.filename)
        if deliver:
            ctrl_c.deliver()

    def _write(self):
        """Write the profile collected so far, atomically (a temporary file
        in the same directory, then os.replace: exports.export)."""
        try:
            data = self.profiler.profile_data()
            run_options.write_output(data, self.filename, self.format,
                                 min_percent=self.min_percent)
            self.writes += 1
        except Exception as exc:
            self._report("cannot write %s: %s" % (
                self.filename, getattr(exc, "strerror", None) or exc))

    def _report(self, message):
        try:
            print("%s: %s" % (self._prog, message), file=sys.stderr)
        except Exception:
            pass

    # -- the end -----------------------------------------------------------------

    def begin_exit(self):
        """The program is ending: signals may still stop profiling but no
        longer start it, and a write in progress is not interrupted."""
        self.closing = True
        self._busy = True

    def end_exit(self):
        """After the final write: restore ``signal.signal``; SIG is ignored
        from now on, so a late signal cannot kill the exiting process."""
        import signal
        if self._installed and os.getpid() == self._pid:
            self._take_out(signal.SIG_IGN)

    def register_at_exit(self):
        import atexit
        atexit.register(self._at_exit)
        self._at_exit_registered = True

    def _final(self, error, was_enabled):
        """install_signal_toggle()'s final write, at exit (once python has
        waited for the program's threads), after ``_toggle_with`` stopped
        the profiler."""
        if os.getpid() != self._pid or not self._installed:
            return False
        self.begin_exit()
        ctrl_c = CtrlC(patience=None).start()
        try:
            self._stopped(error, was_enabled)
            self._write_unwritten()
        finally:
            ctrl_c.stop()
        self.end_exit()
        self._ctrl_c_after_write(ctrl_c, deliver=False)  # the program is over
        return False


def _same_signal(signalnum, ours):
    try:
        return int(signalnum) == ours
    except (TypeError, ValueError):
        return False


def install_signal_toggle(sig, filename, *, idle=True, to=None, min_percent=None,
                          threads=True, **profile_kwargs):
    """Profile this process between signals: each *sig* toggles profiling,
    each stop writes the profile collected so far (all on-periods) to
    *filename*, atomically, and the program's end writes the final one.

    *sig*: 'SIGUSR1', 'USR1', a number or a ``signal.Signals``. *idle*
    (default True): start unprofiled, the first signal starts profiling;
    ``idle=False`` starts now and the first signal stops (and writes).
    *to*: the format, else chosen by *filename*'s extension as ``-o``
    does. *threads* (default True) profiles every thread; other keyword
    arguments go to ``fastprof.Profile``.

    Call it from the main thread. A handler the program already has for
    *sig* is refused (ValueError), and so is one it sets later
    (``signal.signal(sig, ...)`` raises ValueError). Returns the
    ``SignalToggle``; its ``uninstall()`` takes it out (as
    ``fastprof.uninstall_signal_toggle()`` does, which shows as a row of
    the profile if called while profiling, where ``uninstall()`` shows
    none). Linux only.
    """
    signum = parse_signal(sig)
    path = os.fspath(filename)
    fmt = run_options.output_format(path, to)
    if path == run_options.STDOUT:
        raise ValueError("the signal toggle writes a file; '-' (stdout) is not one")
    run_options.check_output_path(path)
    if min_percent is not None and not 0 <= min_percent <= 100:
        raise ValueError("min_percent must be between 0 and 100, not %r" % (min_percent,))
    if fmt in formats.TREE_FORMATS:
        profile_kwargs.setdefault("callpaths", True)
    prof = Profile(threads=threads, **profile_kwargs)
    toggle = SignalToggle(prof, signum, os.path.abspath(path), fmt, min_percent)
    toggle.install(start=not idle)
    toggle.register_at_exit()
    if not idle:
        prof.enable()  # last: nothing of this function is recorded
    return toggle


def uninstall_signal_toggle():
    """Take out the toggle ``install_signal_toggle()`` installed (see
    ``SignalToggle.uninstall``); nothing if there is none."""
    if _active is not None:
        _active.uninstall()
