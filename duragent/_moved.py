"""Names that moved in 0.2, kept working until 0.3 with a `DeprecationWarning` naming their new home.

0.1 put ten top-level packages on `sys.path` (`durable_agents`, `workflows`, `activities`, `stores`, `config`,
`ops`, `baseline`, ...). 0.2 has one import root, `duragent` (CHANGELOG.md lists every move). A source checkout
keeps a small package under each old name whose only job is to call `moved_package`: `import stores.ledger`
then gives the very module `duragent.stores.ledger` (one module object under two names, so a class imported by
the old name *is* the class the engine uses: isinstance and Temporal's type names keep working), and warns once.

The wheel holds none of the old names: it adds `duragent` and `agentic` only.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

REMOVED_IN = "0.3"


def warn_moved(old: str, new: str, *, skip: int = 1) -> None:
    """One `DeprecationWarning`, pointed at the importer: past the `skip` frames of the shim that calls this
    and past the import machinery, so the line shown is the user's `import` (or attribute access)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and (
        skip > 0 or frame.f_code.co_filename.startswith("<frozen importlib") or frame.f_globals["__name__"] == __name__
    ):
        internal = frame.f_code.co_filename.startswith("<frozen importlib")  # warnings.warn skips these itself
        if frame.f_globals.get("__name__") != __name__ and not internal:
            skip -= 1
        frame, level = frame.f_back, level + (0 if internal else 1)
    warnings.warn(f"`{old}` moved to `{new}` in 0.2; the old name goes in {REMOVED_IN}", DeprecationWarning, level)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `old.x.y` as the already importable `new.x.y`, so no module is loaded twice under two names."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def _target(self, fullname: str) -> str | None:
        if not fullname.startswith(self.old + "."):
            return None
        target = self.new + fullname[len(self.old) :]
        try:
            return target if importlib.util.find_spec(target) is not None else None
        except ModuleNotFoundError:
            return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if (new := self._target(fullname)) is None:
            return None  # not a moved module: a file of the old package itself (e.g. a deprecated command)
        return importlib.util.spec_from_loader(fullname, self, origin=new)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        assert spec.origin is not None
        return importlib.import_module(spec.origin)  # the new module itself; its own attributes are kept

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was executed once, under its new name."""


def moved_package(old: str, new: str, *, replace: bool = False) -> None:
    """Make the package `old` an alias of `new`: its submodules are `new`'s, its attributes `new`'s.

    With `replace`, `sys.modules[old]` becomes `new` itself (for a folder that *is* `new`, mapped into the root,
    and would otherwise be loaded a second time); without, the old package stays a shim whose missing attributes
    come from `new` (so it may keep files of its own, such as a deprecated command for `python -m`)."""
    warn_moved(old, new)
    if not any(isinstance(f, _Alias) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(old, new))
    target = importlib.import_module(new)
    if replace:
        sys.modules[old] = target
        return
    shim = sys.modules[old]

    def __getattr__(name: str) -> Any:
        try:
            return getattr(target, name)
        except AttributeError:
            return importlib.import_module(f"{old}.{name}")

    shim.__getattr__ = __getattr__  # type: ignore[method-assign]


def moved_name(module: str, name: str, new_home: str) -> Any:
    """A public name that left `module` for `new_home` (a module's `__getattr__` calls this): warns, returns it."""
    warn_moved(f"{module}.{name}", f"{new_home}.{name}")
    return getattr(importlib.import_module(new_home), name)
