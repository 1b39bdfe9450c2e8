"""The checks of the arguments that the API (``Profile``, the exports, the
views) and the command lines both take: one function, and so one message,
per check.

The API passes its keyword's name (``max_depth``), a command line its
option's (``--max-depth``); the error is a ValueError or TypeError either
way, which the command lines report as a usage error (exit status 2).

``import fastprof`` imports this: it imports nothing.
"""

CLOCKS = ("wall", "cpu")
COROUTINE_MODES = ("call", "wall")


def check_bool(name, value):
    """*value* as a bool; TypeError unless it is a bool or an int."""
    if not isinstance(value, (bool, int)):
        raise TypeError("%s must be True or False, not %r" % (name, value))
    return bool(value)


def check_choice(name, value, choices):
    """*value*; ValueError unless it is one of *choices*."""
    if value not in choices:
        raise ValueError("%s must be %s, not %r" % (
            name, " or ".join(repr(c) for c in choices), value))
    return value


def check_max_depth(name, value):
    """The call-path depth limit: an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %r" % (name, value))
    if value < 1:
        raise ValueError("%s must be >= 1, not %r" % (name, value))
    return value


def check_percent(name, value):
    """A percent of the total time (``min_percent``): a number from 0 to 100."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number between 0 and 100, not %r" % (name, value)) from None
    if not 0.0 <= number <= 100.0:
        raise ValueError("%s must be between 0 and 100, not %g" % (name, number))
    return number
