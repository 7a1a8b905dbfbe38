"""The docs: a README that fits on a page (with the markers .ci/run reads), a command-line
reference that is the parser's current help, and a docs site that Sphinx builds from docs/ and
the numpydoc docstrings with warnings as errors (as CI does, through the README's test
command). The pages' ``>>>`` examples run in tests/test_doctests.py."""
from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_fits_on_a_page_and_keeps_its_markers():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        after = text.split(marker, 1)[1].lstrip()
        assert after.startswith("```bash\n"), marker


def test_readme_links_resolve():
    import re

    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_cli_reference_is_current():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "docs" / "cli.md").read_text() == gen.render(), (
        "docs/cli.md is stale: python3 docs/gen_cli.py > docs/cli.md")


def test_docs_site_builds_with_warnings_as_errors(tmp_path):
    missing = [m for m in ("sphinx", "myst_parser", "numpydoc")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the docs build needs {', '.join(missing)}, from the optional extra 'docs' "
                    "(also in 'test'): pip install -e '.[docs]'")
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    api = (tmp_path / "html" / "api.html").read_text()
    for name in ("cusolver_trace.potrf", "cusolver_trace.compare", "cusolver_trace.trace",
                 "cusolver_trace.NonFiniteError"):
        assert f'id="{name}"' in api, name
