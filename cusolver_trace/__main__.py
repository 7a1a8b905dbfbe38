"""``python3 -m cusolver_trace`` is ``cusolver-trace``."""
import sys

from .cli import main

sys.exit(main())
