"""``python -m cusolver_trace.tracing ...``: the ``cusolver-trace trace`` command."""
import sys

from .command import main

sys.exit(main())
