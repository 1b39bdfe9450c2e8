"""What both modes of the harness (timing, accuracy) and the question scripts
share: where things are, which interpreters and which fastprof build to
measure, starting a worker and reading its result, results files (JSON,
gzip, summaries rounded to 5 digits), command lines that refuse bad input
in one line, markdown rows.  Standard library only.
"""

import argparse
import datetime
import glob
import gzip
import json
import os
import platform
import subprocess
import sys

from harness.worker_common import RESULT_TAG

HARNESS = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HARNESS)                  # benchmarks/
ROOT = os.path.dirname(BENCH)                     # the checkout
PYENV_VERSIONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]


# --------------------------------------------------------------------------- interpreters and builds

def interpreter_minor(python):
    """'3.11' for a CPython 3.11 executable, or None if it does not run."""
    try:
        return subprocess.run([python, "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
                              stdout=subprocess.PIPE, universal_newlines=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def find_pyenv_pythons():
    """The newest CPython of each of PYENV_VERSIONS: pyenv's, else scripts/find-python.sh's."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    try:
        root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True,
                              check=True).stdout.strip() or root
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for minor in PYENV_VERSIONS:
        cands = sorted(glob.glob(os.path.join(root, "versions", minor + ".*", "bin", "python")),
                       key=lambda p: [int(x) if x.isdigit() else 0
                                      for x in p.split(os.sep)[-3].split(".")])
        cands = [c for c in cands if os.path.basename(os.path.dirname(os.path.dirname(c)))
                 .replace(".", "").isdigit()]
        if cands:
            found.append(cands[-1])
            continue
        # 3.14+: not in pyenv here; scripts/find-python.sh knows the
        # per-machine cache that scripts/install-python.sh fills.
        finder = os.path.join(ROOT, "scripts", "find-python.sh")
        proc = subprocess.run([finder, minor], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True)
        if proc.returncode == 0 and proc.stdout.strip():
            found.append(proc.stdout.strip())
        else:
            print("warning: no CPython %s under %s/versions nor scripts/find-python.sh"
                  % (minor, root), file=sys.stderr)
    return found


def venv_override(pythons, venv_dir):
    """Use VENV_DIR/venv-3.X/bin/python (same base interpreter + yappi etc.) when it exists."""
    out = []
    for py in pythons:
        ver = interpreter_minor(py)
        cand = os.path.join(venv_dir, "venv-%s" % ver, "bin", "python")
        out.append(cand if ver and os.path.exists(cand) else py)
    return out


def pythonpath_for(template, python):
    """--pythonpath TEMPLATE for one interpreter: '{minor}' becomes its version
    (e.g. 'build/py{minor}/lib', the per-version builds of `make build`)."""
    if not template:
        return None
    return os.path.abspath(template.format(minor=interpreter_minor(python)))


def build_lib(minor):
    """The build under test for Python ``minor`` (`make build-X.Y`), or FASTPROF_LIB."""
    return os.environ.get("FASTPROF_LIB") or os.path.join(ROOT, "build", "py" + minor, "lib")


def dev_python(minor):
    """The checkout's interpreter for Python ``minor`` (`make venvs`)."""
    return os.path.join(ROOT, ".venv", "py" + minor, "bin", "python")


# --------------------------------------------------------------------------- workers

def worker_env(pythonpath=None):
    """The worker's environment: this one, ``pythonpath`` first on PYTHONPATH
    (so it decides which fastprof the worker imports), a fixed hash seed."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath] + [p for p in env.get("PYTHONPATH", "")
                                                            .split(os.pathsep) if p])
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONSTARTUP", None)
    return env


def run_worker(cmd, env, timeout, preexec_fn=None):
    """Run one worker command (its last argument: the spec, a dict or '--probe');
    return (result dict or None, error text or None)."""
    cmd = list(cmd[:-1]) + [cmd[-1] if isinstance(cmd[-1], str) else json.dumps(cmd[-1])]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              timeout=timeout, universal_newlines=True, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        return None, "timed out after %.0f s" % timeout
    except OSError as exc:
        return None, "cannot start %s: %s" % (cmd[0], exc)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            if proc.returncode == 0:
                return json.loads(line[len(RESULT_TAG):]), None
            break
    tail = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()[-15:]
    return None, "exit code %d:\n    %s" % (proc.returncode, "\n    ".join(tail))


def run_each(pythons, results, measure, show, save):
    """Measure each interpreter in turn (``measure(python)`` -> its record),
    ``show`` it, ``save`` the results after each (a long run leaves partial
    results); False if any record has problems."""
    ok = True
    for python in pythons:
        started = datetime.datetime.now().isoformat(timespec="seconds")
        record = measure(python)
        record["created"] = started   # (files may gather runs made at other times)
        results["runs"].append(record)
        show(record)
        ok = ok and not record["problems"]
        save(results)
    return ok


def exit_status(ok):
    if not ok:
        print("FAILED: see PROBLEM lines above", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------- results files

def new_results(schema, config):
    """The head of a results file; the runs, one per interpreter, go in ``runs``."""
    return {
        "schema": schema,
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": {"platform": platform.platform(), "machine": platform.machine(),
                 "processor": platform.processor(), "cpus": os.cpu_count()},
        "config": config,
        "runs": [],
    }


def open_json(path, mode="r"):
    """A results file, gzip-compressed when its name ends in .gz."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def read_json(path):
    with open_json(path) as f:
        return json.load(f)


def write_json(path, results, compact=True):
    """Write ``results``; compact: no white space (summaries, stored in git)."""
    with open_json(path, "w") as f:
        if compact:
            f.write(json.dumps(results, separators=(",", ":")) + "\n")
        else:
            json.dump(results, f, indent=1)


def rounded(obj, digits=5):
    """``obj`` with every float cut to ``digits`` significant digits (a smaller file)."""
    if isinstance(obj, float):
        return float("%.*g" % (digits, obj))
    if isinstance(obj, dict):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v, digits) for v in obj]
    return obj


# --------------------------------------------------------------------------- command lines

def arg_parser(doc, prog=None):
    """An argparse parser whose description is ``doc``'s first paragraph and
    whose epilog the rest (examples, notes), as written."""
    return argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   epilog=doc.split("\n\n", 1)[1] if "\n\n" in doc else None)


def comma_list(text):
    """'a,b,' -> ['a', 'b'] ('' -> []): an argparse type."""
    return [x for x in text.split(",") if x]


def check_names(parser, what, given, known):
    """One-line error (exit 2) when ``given`` names something not in ``known``."""
    unknown = [x for x in given if x not in known]
    if unknown:
        parser.error("unknown %s(s): %s" % (what, ", ".join(unknown)))


# --------------------------------------------------------------------------- tables

def md_row(cells):
    """One markdown table row."""
    return "| " + " | ".join(cells) + " |"
