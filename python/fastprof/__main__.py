"""``python -m fastprof``: profile a script or module, as ``python -m cProfile``."""

import sys

from .modes.run_command import main

if __name__ == "__main__":
    sys.exit(main())
