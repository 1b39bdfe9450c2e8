"""The floor: what CPython charges any profiler for delivering its events.

``floor_hook.c`` is a hook that reads the clock once per event and
records nothing, delivered by the mechanism fastprof uses
(``PyEval_SetProfile`` up to 3.11, a vectorcall object registered with
``sys.monitoring`` from 3.12). What it adds to a workload is a cost no
profiler built on those hooks can avoid. The timing mode measures it as
its ``floor`` mode, questions/micro.py and questions/between_events.py use
it as their floor.

The extension is compiled on first use with ``cc`` for the running
interpreter and cached in the temp directory (keyed by the interpreter's
extension suffix and the source's contents).
"""

import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_hook.c")
TOOL_ID = 5  # sys.monitoring: a free id, not one fastprof (2-4) or cProfile (2) uses
EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_UNWIND", "PY_YIELD",
          "CALL", "C_RETURN", "C_RAISE")
IMPLIED_BY_CALL = ("C_RETURN", "C_RAISE")  # set_events refuses them alone


def build():
    """Path of the compiled hook for this interpreter; raises RuntimeError if it cannot be built."""
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    out_dir = os.path.join(tempfile.gettempdir(), "fastprof-floor-%s" % digest)
    target = os.path.join(out_dir, "_floor_hook" + suffix)
    if os.path.exists(target):
        return target
    os.makedirs(out_dir, exist_ok=True)
    tmp = "%s.%d.tmp" % (target, os.getpid())
    cmd = [os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC",
           "-I" + sysconfig.get_paths()["include"], SOURCE, "-o", tmp]
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise RuntimeError("cannot build %s: %s %s" % (SOURCE, exc, detail.decode(errors="replace"))) from exc
    os.replace(tmp, target)  # atomic: concurrent workers never load a half-written file
    return target


def load(path=None):
    """The compiled hook module (built first if ``path`` is not given)."""
    path = path or build()
    spec = importlib.util.spec_from_file_location("_floor_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FloorHook:
    """``enable()`` / ``disable()`` like a profiler, delivering fastprof's events
    to the hook. ``module`` is what ``load()`` returned."""

    def __init__(self, module):
        self.module = module

    def enable(self):
        if sys.version_info < (3, 12):
            self.module.enable()
            return
        mon = sys.monitoring
        mon.use_tool_id(TOOL_ID, "fastprof-floor")
        mask = 0
        for name in EVENTS:
            flag = getattr(mon.events, name)
            mon.register_callback(TOOL_ID, flag, self.module.tick)
            if name not in IMPLIED_BY_CALL:
                mask |= flag
        mon.set_events(TOOL_ID, mask)

    def disable(self):
        if sys.version_info < (3, 12):
            self.module.disable()
            return
        mon = sys.monitoring
        mon.set_events(TOOL_ID, 0)
        for name in EVENTS:
            mon.register_callback(TOOL_ID, getattr(mon.events, name), None)
        mon.free_tool_id(TOOL_ID)
