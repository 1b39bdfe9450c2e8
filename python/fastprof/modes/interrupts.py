"""Ctrl-C while a run mode holds what it collected: noted, not raised.

A KeyboardInterrupt lands between any two lines of Python: between a
message and the ``try`` meant to handle it, or halfway through writing a
profile.  While a ``CtrlC`` is in place, SIGINT (and any other signal
given, such as top's SIGTERM and SIGHUP) only counts in ``pressed``; the
run mode looks at it where it can act (stop, collect, write), and says
so.  Past ``patience`` presses a signal acts as before it was put in
place (Ctrl-C again: stop without waiting for the profile).

    ctrl_c = CtrlC().start()   # the main thread: elsewhere it does nothing
    try:
        ...                    # if ctrl_c.pressed: stop, collect, write
    finally:
        ctrl_c.stop()          # the handlers from before back

A handler not set from Python (``signal.getsignal`` gives None) is left
alone.  Imports only ``_signal``, which the interpreter loaded at startup:
``python -m fastprof`` loads this before the program, which must find
``sys.modules`` as cProfile leaves it, and start() runs in the instant
after the program, where an import's own code could swallow a Ctrl-C (a
KeyboardInterrupt in an import lock's weakref callback is only printed).
"""

import _signal


class CtrlC:
    """SIGINT (or *signals*) noted in ``pressed`` while started."""

    def __init__(self, signals=None, patience=1):
        """*signals*: signal numbers (default SIGINT); *patience*: the
        presses noted before one acts as it did before (None: all noted)."""
        self.signals = signals
        self.patience = patience
        self.pressed = 0
        self.last = None     # the signal number of the last one noted
        self._seen = 0       # presses news() reported
        self._previous = {}  # signal -> its handler before ours

    def start(self):
        """Put the noting handler in place (the main thread only: signal
        handlers are set and run there; elsewhere nothing); return self.
        Again: no-op."""
        for sig in (_signal.SIGINT,) if self.signals is None else self.signals:
            if sig in self._previous:
                continue
            try:
                old = _signal.getsignal(sig)
                if old is None:
                    continue
                _signal.signal(sig, self._note)  # ValueError off the main thread
            except (OSError, ValueError):
                continue
            self._previous[sig] = old
        return self

    def stop(self):
        """The handlers from before start() back."""
        while self._previous:
            sig, old = self._previous.popitem()
            try:
                _signal.signal(sig, old)
            except (OSError, ValueError):
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def news(self):
        """True if a press came since the last news() that said so: the
        mode says what it does about it once."""
        if self.pressed > self._seen:
            self._seen = self.pressed
            return True
        return False

    def deliver(self, frame=None):
        """After stop(): act on the last signal noted as the handler from
        before would have (KeyboardInterrupt for Ctrl-C by default)."""
        sig = self.last
        if sig is None:
            return
        self.last = None
        self.pressed = 0
        handler = _signal.getsignal(sig)
        if callable(handler):
            handler(sig, frame)
        elif handler == _signal.SIG_DFL:
            _signal.raise_signal(sig)

    def _note(self, signum, frame):
        self.pressed += 1
        self.last = signum
        if self.patience is not None and self.pressed > self.patience:
            old = self._previous.get(signum)
            if callable(old):
                old(signum, frame)
            elif old != _signal.SIG_IGN:
                raise KeyboardInterrupt
