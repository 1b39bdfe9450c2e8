"""The benchmark harness behind ``benchmarks/run.py``: the timing mode
(timing*.py), the accuracy mode (accuracy*.py, distance.py, samplers.py),
what both share (common.py), the workers each measurement runs in
(*_worker.py, worker_common.py) and the floor hook (floor_hook.py).
benchmarks/README.md has the map."""
