"""``python -m cusolver_trace.tracing ...``: the ``cusolver-trace trace`` command (the same
parser: one-line usage errors, options given once)."""
import sys

from .command import main

sys.exit(main())
