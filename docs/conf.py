"""Sphinx configuration for the chickenfoot documentation site (`make docs` builds it into site/).

Markdown pages (MyST), the furo theme, and an API reference generated from the docstrings.
Everything the built site loads is local: no fonts, scripts or stylesheets from the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "chickenfoot"
author = "the chickenfoot authors"
copyright = "the chickenfoot authors"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx_copybutton",
    "cf_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# Results folders hold json, sh, py and png beside their Markdown: only .md/.rst are sources.
# The score cards (benchmark/*.md) are shown by benchmark.md, which includes them: not pages too.
exclude_patterns = ["_build", "_ext", "**/__pycache__", "benchmark/*.md"]

# MyST: `{include}` of the changelog, anchors for `#section` links, tables and colon fences.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
suppress_warnings = ["myst.header"]

# No page has math, so Sphinx adds no MathJax script (it would load from a CDN); tests/test_docs.py
# checks the built site for remote loads.

# The API reference: every module of cf_env and training, from their docstrings (Markdown).
autosummary_generate = True
autosummary_imported_members = False
# Objects are documented where they are defined, not again where a package re-exports them.
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True,
                           "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_mock_imports = ["ray"]  # the rllib extra has a venv of its own
default_role = "code"
# `make docs` is nitpicky (-n): every reference to our own code must resolve. Other libraries'
# types in signatures cannot (no intersphinx: the build is offline), so those are let through.
EXTERNAL = ("numpy", "np", "pathlib", "collections", "os", "typing", "pyspiel", "torch",
            "pettingzoo", "gymnasium", "argparse", "PIL", "yaml", "ray", "multiprocessing",
            "threading", "io", "json", "subprocess", "types", "enum", "dataclasses", "stable_baselines3",
            "sb3_contrib", "tensordict", "torchrl", "tianshou", "zipfile", "concurrent", "open_spiel",
            "ImageDraw", "Path", "mmap", "numba")
nitpick_ignore_regex = [
    (r"py:(class|obj|exc|data)", rf"({'|'.join(EXTERNAL)})(\..*)?"),
    (r"py:class", r"_\w+"),  # a private helper class named in an annotation
]

html_theme = "furo"
html_title = "chickenfoot"
# custom.css: code blocks wrap and tables shrink, so nothing is cut off at 1366 px (tests/site
# checks every page at that width); the favicon is the web app's.
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_favicon = "_static/favicon.svg"
html_theme_options = {"navigation_with_keys": True}
html_show_sourcelink = False
html_copy_source = False
