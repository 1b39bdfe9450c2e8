"""Whether a process still exists: asked by ``fastprof attach`` of its
target, and by the attach agent (inside the target) of its attacher.
Imports nothing but os: the agent imports it into the target."""

import os


def alive(pid):
    """True if process *pid* exists (ours to signal or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, not ours to signal
    return True
