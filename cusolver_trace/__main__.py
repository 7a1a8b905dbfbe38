"""``python -m cusolver_trace`` == the ``cusolver-trace`` command."""
import sys

from .cli import main

sys.exit(main())
