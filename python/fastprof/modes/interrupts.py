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
alone.  Imports nothing at import time: ``python -m fastprof`` loads it
before the program, which must find ``sys.modules`` as cProfile leaves it.
"""


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
        handlers are set and run there); return self.  Again: no-op."""
        import signal
        import threading
        if threading.current_thread() is not threading.main_thread():
            return self
        for sig in (signal.SIGINT,) if self.signals is None else self.signals:
            if sig in self._previous:
                continue
            try:
                old = signal.getsignal(sig)
                if old is None:
                    continue
                signal.signal(sig, self._note)
            except (OSError, ValueError):
                continue
            self._previous[sig] = old
        return self

    def stop(self):
        """The handlers from before start() back."""
        import signal
        while self._previous:
            sig, old = self._previous.popitem()
            try:
                signal.signal(sig, old)
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
        import signal
        sig = self.last
        if sig is None:
            return
        self.last = None
        self.pressed = 0
        handler = signal.getsignal(sig)
        if callable(handler):
            handler(sig, frame)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(sig)

    def _note(self, signum, frame):
        self.pressed += 1
        self.last = signum
        if self.patience is not None and self.pressed > self.patience:
            import signal
            old = self._previous.get(signum)
            if callable(old):
                old(signum, frame)
            elif old != signal.SIG_IGN:
                raise KeyboardInterrupt
