"""In a source checkout, `duragent.workflows` and `duragent.activities` are the top-level `workflows/` and
`activities/` folders beside this package (pyproject.toml maps them into the root; the wheel has them inside).

An editable install maps them too, but to the one checkout it was made from; a second checkout run with the same
venv (a git worktree, the mutation audit's scratch copy, CI's clone) must import its own folders, never another
tree's. So the package that is imported finds the folders beside itself. Installed from the wheel, the folders are
inside the package and nothing here runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

MAPPED = ("workflows", "activities")  # pyproject.toml's [tool.setuptools.package-dir]


class _BesideThePackage(importlib.abc.MetaPathFinder):
    """Finds `duragent.<folder>` as `<checkout>/<folder>/`, for the folders pyproject.toml maps into the root."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        parent, _, leaf = fullname.rpartition(".")
        if parent != __package__ or leaf not in MAPPED:
            return None
        folder = self.checkout / leaf
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def map_the_checkouts_folders() -> None:
    # First: the workflow sandbox executes this module again for every workflow it validates or runs, where file
    # system calls are refused; the real import decided already (and installed the finder, in a checkout).
    workflow = sys.modules.get("temporalio.workflow")  # never imported here: `job` does not load Temporal
    if workflow is not None and workflow.unsafe.in_sandbox():
        return
    if any(isinstance(finder, _BesideThePackage) for finder in sys.meta_path):
        return
    package = Path(__file__).parent  # absolute: a module's __file__ is
    checkout = package.parent
    if (package / MAPPED[0]).is_dir() or not all((checkout / name / "__init__.py").is_file() for name in MAPPED):
        return  # installed (the folders are inside), or not our checkout
    sys.meta_path.insert(0, _BesideThePackage(checkout))  # before an editable install's finder (another tree)
