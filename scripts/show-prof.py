"""Print the top rows of a .prof file with the standard pstats module
(which also shows that the file reads as a cProfile file).

usage: python scripts/show-prof.py FILE [N]
"""
import pstats
import sys

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
pstats.Stats(path).strip_dirs().sort_stats("cumulative").print_stats(n)
