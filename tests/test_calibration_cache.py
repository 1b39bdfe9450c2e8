"""The calibration cache (fastprof/recording/calibration_cache.py): each kind of event
costs the lowest this build has measured, so a calibration made while the
machine was slow does not remove more than the profiler took."""
import os
import stat

import pytest

from fastprof import _fastprof
from fastprof.recording import calibration, calibration_cache
from fastprof.recording.calibration_cache import fastest
from helpers import USING_CPROFILE

pytestmark = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only feature")

B = "build-a"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "calibration.tsv"
    monkeypatch.setenv("FASTPROF_CALIBRATION_CACHE", str(path))
    return path


def costs(call, line=0.0):
    return {"call": (call / 2, call), "line": (line / 2, line)}


def test_the_lower_of_measured_and_cached_per_kind(cache):
    assert fastest(B, "k", costs(40e-9)) == costs(40e-9)  # nothing cached: measured
    assert fastest(B, "k", costs(90e-9)) == costs(40e-9)  # slower now: the cached
    assert fastest(B, "k", costs(30e-9)) == costs(30e-9)  # faster now: kept from now on
    assert fastest(B, "k", costs(35e-9)) == costs(30e-9)
    assert calibration_cache._load(str(cache))[B]["k"] == {"call": [15e-9, 30e-9]}


def test_kinds_not_measured_stay_zero_and_keep_their_cached_cost(cache):
    fastest(B, "k", costs(40e-9, line=20e-9))
    assert fastest(B, "k", costs(50e-9, line=0.0)) == {"call": (20e-9, 40e-9), "line": (0.0, 0.0)}
    fastest(B, "k", costs(10e-9, line=0.0))
    assert calibration_cache._load(str(cache))[B]["k"]["line"] == [10e-9, 20e-9]


def test_builds_and_kinds_of_profiler_are_apart(cache):
    fastest(B, "k", costs(10e-9))
    assert fastest("build-b", "k", costs(50e-9)) == costs(50e-9)
    assert fastest(B, "other", costs(50e-9)) == costs(50e-9)
    assert fastest(B, "k", costs(50e-9)) == costs(10e-9)


def test_the_oldest_builds_go(cache, monkeypatch):
    monkeypatch.setattr(calibration_cache, "MAX_BUILDS", 3)
    for i in range(5):
        fastest("b%d" % i, "k", costs(10e-9))
    assert list(calibration_cache._load(str(cache))) == ["b2", "b3", "b4"]


def test_private_file_in_a_new_directory(cache):
    fastest(B, "k", costs(10e-9))
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert [p.name for p in cache.parent.iterdir()] == ["calibration.tsv"]  # no temporary left


@pytest.mark.parametrize("content", ["not a table", "build-a\tk\tcall\t1e-9\n",
                                     "build-a\tk\tcall\t-1e-9\t5e-9\n",
                                     "build-a\tk\tcall\t9e-9\t5e-9\n",
                                     "build-a\tk\tcall\tx\t5e-9\n", "build-a\tk\tcall\tnan\tnan\n"])
def test_a_damaged_file_is_ignored_and_replaced(cache, content):
    cache.parent.mkdir()
    cache.write_text(content)
    assert fastest(B, "k", costs(40e-9)) == costs(40e-9)
    assert calibration_cache._load(str(cache))[B]["k"] == {"call": [20e-9, 40e-9]}


def test_a_file_not_in_utf8_is_ignored(cache):
    cache.parent.mkdir()
    cache.write_bytes(b"\xff\xfe\x00")
    assert fastest(B, "k", costs(40e-9)) == costs(40e-9)


def test_an_unwritable_place_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FASTPROF_CALIBRATION_CACHE", str(blocker / "calibration.json"))
    assert fastest(B, "k", costs(40e-9)) == costs(40e-9)


@pytest.mark.parametrize("value", ["off", ""])
def test_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv("FASTPROF_CALIBRATION_CACHE", value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert calibration_cache.cache_path() is None
    assert fastest(B, "k", costs(40e-9)) == costs(40e-9)
    assert list(tmp_path.iterdir()) == []


def test_default_place(monkeypatch, tmp_path):
    monkeypatch.delenv("FASTPROF_CALIBRATION_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert calibration_cache.cache_path() == os.path.join(str(tmp_path), "fastprof", "calibration.tsv")


def test_the_profilers_costs_come_through_the_cache(cache, monkeypatch):
    # a cost cached lower than any measurement is what a new profiler gets
    monkeypatch.setattr(calibration, "_measured", {})
    key = (False, "wall", True, False, False, False)  # (fast, clock, builtins, lines, callpaths, memory)
    build = calibration_cache.build_key(_fastprof.__file__)
    cache.parent.mkdir()
    cache.write_text("".join("%s\t%r\t%s\t0.0\t1e-12\n" % (build, key, kind) for kind in calibration.KINDS))
    got = calibration.delivery_costs()
    assert got["call"] == (0.0, 1e-12) and got["resume"] == (0.0, 1e-12)
    assert got["line"] == (0.0, 0.0)  # no lines=: not measured, not taken
    # and a build whose extension changed does not see it; a key is one field
    assert calibration_cache.build_key(_fastprof.__file__ + "x") != build
    assert "\t" not in build and "\n" not in build


def test_call_site_comes_out_of_the_calls_outside_halves():
    costs = dict(calibration.ZERO, call=(5.0, 10.0), **{"return": (5.0, 10.0)},
                 call_site=(0.0, 4.0))
    got = calibration._call_site_apart(costs)
    # the outside (10: half before the call's read, half after the
    # return's) loses the site's 4, half from each; the inside stays
    assert got["call"] == (3.0, 8.0) and got["return"] == (5.0, 8.0)
    assert got["call_site"] == (0.0, 4.0)
    # a site measured above the whole outside is cut to it: the call's
    # total is never charged twice
    got = calibration._call_site_apart(dict(costs, call_site=(0.0, 30.0)))
    assert got["call"] == (0.0, 5.0) and got["return"] == (5.0, 5.0)
    assert got["call_site"] == (0.0, 10.0)
    assert costs["call"] == (5.0, 10.0)  # the input is left as it was


def test_call_site_is_taken_apart_after_the_cache(cache, monkeypatch):
    # the cache keeps each kind's low as measured (the site still inside
    # the call): lows of two runs could not add up to a call otherwise
    monkeypatch.setattr(calibration, "_measured", {})
    measured = dict(calibration.ZERO, call=(5.0, 10.0), **{"return": (5.0, 10.0)},
                    call_site=(0.0, 4.0))
    monkeypatch.setattr(calibration, "measure", lambda *a: dict(measured))
    monkeypatch.setattr(calibration, "_can_measure", lambda: True)
    got = calibration.delivery_costs()
    assert got["call"] == (3.0, 8.0) and got["call_site"] == (0.0, 4.0)
    text = cache.read_text()
    assert "\tcall\t5.0\t10.0\n" in text and "\tcall_site\t0.0\t4.0\n" in text
