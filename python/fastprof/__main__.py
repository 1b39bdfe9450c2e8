"""``python -m fastprof``: profile a script or module, as ``python -m cProfile``."""

import sys

from fastprof.run_cli import main

if __name__ == "__main__":
    sys.exit(main())
