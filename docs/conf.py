"""Sphinx configuration of the cusolver-trace docs site: the Markdown pages of ``docs/``
(MyST) and the API reference from the numpydoc docstrings.

Build it as CI does (warnings are errors)::

    python3 -m sphinx -W --keep-going -b html docs docs/_build/html

``tests/test_docs_site.py`` runs that build.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(".."))   # this checkout's package

project = "cusolver-trace"
author = "the cusolver-trace authors"
copyright = "the cusolver-trace authors"
from cusolver_trace import __version__ as release  # noqa: E402

version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "gen_cli.py"]

# Markdown: anchors for "#section" links within and across pages; the page's own `$` and
# tables as written
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# The API reference: numpydoc renders the docstrings' Parameters / Returns / Raises /
# Examples sections; members are listed where the page names them, not by numpydoc.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"   # the numpydoc sections state the types

html_theme = "alabaster"
html_title = f"cusolver-trace {release}"
html_static_path: list = []
