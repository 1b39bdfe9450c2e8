"""Where fast=True is refused: Python 3.13, whose specialized class calls
run __init__ without the frame evaluator (csrc/fpy_cpython_internals.h:
FPY_EVALFRAME_UNAVAILABLE). Everywhere else it is available
(tests/test_fast_mode.py tests it).

The gate is checked against the interpreter itself: CPython's own test
evaluator (_testinternalcapi.set_eval_frame_record, 3.11+) either sees
every call of a class's __init__ from a hot call site, and fast=True must
be available, or misses some, and it must be refused."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="fast=True is fastprof's")

ON_3_13 = sys.version_info[:2] == (3, 13)


def test_fast_refused_on_3_13_only():
    import fastprof
    if ON_3_13:
        with pytest.raises(RuntimeError, match="not available on Python 3.13"):
            fastprof.Profile(fast=True)
    else:
        assert fastprof.Profile(fast=True).options["fast"] is True


@pytest.mark.skipif(not ON_3_13, reason="the refusal is 3.13's")
def test_cli_fast_on_3_13_is_a_usage_error(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("pass\n")
    proc = subprocess.run([sys.executable, "-m", "fastprof", "--fast", str(script)],
                          capture_output=True, text=True, env=helpers.cli_env(), timeout=120)
    assert proc.returncode == 2
    assert "not available on Python 3.13" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


class Init:
    def __init__(self):
        pass


def make_instances():
    for _ in range(200):
        Init()


def test_gate_matches_what_the_interpreter_does():
    capi = pytest.importorskip("_testinternalcapi")
    if not hasattr(capi, "set_eval_frame_record"):
        pytest.skip("no test evaluator before 3.11 (and no class-call specialization)")
    import fastprof
    make_instances()  # specialize the call site first, as a long-running program has
    seen = []
    capi.set_eval_frame_record(seen)
    try:
        make_instances()
        make_instances()
    finally:
        capi.set_eval_frame_default()
    sees_every_call = seen.count("__init__") == 400
    if sees_every_call:
        assert fastprof.Profile(fast=True).options["fast"] is True
    else:
        with pytest.raises(RuntimeError, match="run __init__ without the frame evaluator"):
            fastprof.Profile(fast=True)
