"""``python -m cusolver_trace.tracing ...``: the ``cusolver-trace trace`` command, parsed by the
same command-line parser (one-line usage errors, options given once)."""
import sys

from ..cli import main

sys.exit(main(["trace", *sys.argv[1:]]))
