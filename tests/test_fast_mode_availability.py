"""Where fast=True is refused: Python 3.13, whose specialized class calls
run __init__ without the frame evaluator (csrc/fpy_compat.h:
FPY_EVALFRAME_UNAVAILABLE). Everywhere else it is available
(tests/test_fast_mode.py tests it)."""
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
