"""A profile recorded with ``only=`` or ``fast=True`` leaves things out
(other Python code; C functions): the file says so in its trailer, and
``fastprof view``, the HTML report and ``fastprof merge`` pass it on, so a
reader of the file later is told what is missing."""
import only_app
import pytest

from fastprof import Profile
from fastprof.data.profile_file import load_profile
from fastprof.exports.html import report_data
from fastprof.tools.merge import merge_profiles
from helpers import USING_CPROFILE, cli_env, run_python

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")


def fast_available():
    try:
        Profile(fast=True)
    except RuntimeError:
        return False
    return True


def write(path, **options):
    prof = Profile(**options)
    prof.runcall(only_app.main)
    prof.dump_stats(str(path))
    return str(path)


def view(path):
    proc = run_python(["-m", "fastprof.cli", "view", path], env=cli_env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_only_is_in_the_file_and_in_view(tmp_path):
    scoped = write(tmp_path / "scoped.prof", only=["only_app"])
    plain = write(tmp_path / "plain.prof")
    assert load_profile(scoped).only == ["only_app"]
    assert load_profile(plain).only is None
    note = [ln for ln in view(scoped) if ln.startswith("Only only_app:")]
    assert note and "own time" in note[0]
    assert not any(ln.startswith("Only ") for ln in view(plain))
    assert report_data(load_profile(scoped))["only"] == ["only_app"]
    assert report_data(load_profile(plain))["only"] is None


@pytest.mark.skipif(not fast_available(), reason="fast=True is refused on this version")
def test_fast_is_in_the_file_and_in_view(tmp_path):
    fast = write(tmp_path / "fast.prof", fast=True)
    plain = write(tmp_path / "plain.prof")
    assert load_profile(fast).fast is True
    assert load_profile(plain).fast is False
    assert any(ln.startswith("Fast mode: Python functions only") for ln in view(fast))
    assert not any(ln.startswith("Fast mode") for ln in view(plain))
    assert report_data(load_profile(fast))["fast"] is True


def test_merge_keeps_what_every_input_left_out(tmp_path):
    a = load_profile(write(tmp_path / "a.prof", only=["only_app"]))
    b = load_profile(write(tmp_path / "b.prof", only=["only_app:main", "only_app"]))
    plain = load_profile(write(tmp_path / "plain.prof"))
    assert merge_profiles([a, a]).only == ["only_app"]
    assert merge_profiles([a, b]).only == ["only_app", "only_app:main"]
    # an unscoped input has the other code: the sum is not scoped
    assert merge_profiles([a, plain]).only is None
    assert merge_profiles([plain, plain]).fast is False
    if fast_available():
        fast = load_profile(write(tmp_path / "fast.prof", fast=True))
        assert merge_profiles([fast, fast]).fast is True
        assert merge_profiles([fast, plain]).fast is False
