"""reasoning-gym's dataset registry, importing only the datasets a reference names.

`import reasoning_gym` imports all of its ~100 dataset modules, and with them matplotlib
(through cellpylib), sympy and more: 1.5-4 s of a routed start, to read a reference or two
of `basic_arithmetic`. A dataset registers itself (`reasoning_gym.factory.register_dataset`)
when its own module is imported, so only that module is needed:

- **The index** ({dataset name: the module its class is defined in}) comes from the whole
  registry once, by importing the package as usual, and is stored in
  `$REWARDSMITH_HOME/cache/reasoning_gym/<key>.json`. The key is a SHA-256 of
  reasoning-gym's version and of every file in the package (path, size, mtime): another
  release or an edited file gives another key, never a stale index. A name the index lacks is
  an unknown dataset, as it is for the registry it was taken from.
- **One dataset**: on a hit, the dataset's module is imported with the package `__init__`
  files above it left unexecuted (they are what imports everything): those packages are
  in `sys.modules` as real module objects (`module_from_spec`, with their `__path__` and
  `__file__`) whose code has not run yet. The module's own imports (`factory`, `coaching`,
  its data files) run as usual, now or when its scorer needs them. The dataset must then be
  in that import's `factory.DATASETS`, else the package is imported whole.
- **Complete on first use**: a submodule looked up on such a package (`from reasoning_gym
  import utils`) is imported, as that statement does; any other name it lacks
  (`reasoning_gym.create_dataset`, `__version__`) first imports the package whole, in its
  own order, so the rest of the process sees an ordinary, whole `reasoning_gym` (the modules
  already imported are reused: each dataset is registered once). A dataset whose module
  cannot be imported alone (`acre`'s imports form a cycle only the package's order resolves)
  is read from the whole package.
- **Once the package is imported whole** (by the index, by a caller, or by a user who
  registered datasets of their own), its registry is the one used, as before.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import sys
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardsmith.config import home_dir
from rewardsmith.errors import InputError
from rewardsmith.files import atomic_write, read_json

log = logging.getLogger(__name__)

PACKAGE = "reasoning_gym"
#: Bumped when the index file's layout or the key's recipe changes.
INDEX_FORMAT = 1
# A module name the index may hold: the package's own dotted names, nothing else.
_MODULE = re.compile(r"reasoning_gym(\.[A-Za-z_][A-Za-z0-9_]*)+")
# Far above ~100 names (a few kB of JSON).
MAX_INDEX_BYTES = 4 * 2**20

_lock = threading.RLock()
# Packages imported without running their __init__ yet (see `_pending_package`), by name.
_pending: dict[str, types.ModuleType] = {}
_index: dict[str, str] | None = None


def is_registered(name: str) -> bool:
    """Whether reasoning-gym registers a dataset `name` (its registry, as `import
    reasoning_gym` fills it; see the module docstring)."""
    with _lock:
        full = _imported_factory()
        if full is not None:
            return name in full.DATASETS
        return name in _dataset_index()


def factory_for(name: str) -> Any:
    """The `reasoning_gym.factory` module, with dataset `name` in its `DATASETS` when
    reasoning-gym registers it (its `get_score_answer_fn` and `create_dataset` then work for
    it): from importing the dataset's module alone when the package is not imported yet."""
    with _lock:
        full = _imported_factory()
        if full is not None:
            return full
        module = _dataset_index().get(name)
        if module is not None:
            factory = _import_alone(module)
            if factory is not None and name in factory.DATASETS:
                return factory
            log.info("reasoning-gym: %s did not register %r alone; importing it all", module, name)
        return _import_whole()


def _imported_factory() -> Any:
    """The package's factory when `reasoning_gym` is imported whole, else None."""
    if PACKAGE in sys.modules and PACKAGE not in _pending:
        return importlib.import_module(f"{PACKAGE}.factory")
    return None


def _import_whole() -> Any:
    """Import reasoning-gym as `import reasoning_gym` does (running pending `__init__`s)."""
    with _lock:
        if PACKAGE in _pending:
            _complete()
        importlib.import_module(PACKAGE)
        return importlib.import_module(f"{PACKAGE}.factory")


def _dataset_index() -> dict[str, str]:
    """{dataset name: module}, read from the cache or taken from the whole registry."""
    global _index
    with _lock:
        if _index is None:
            key = _index_key()
            path = index_dir() / f"{key}.json"
            _index = _read_index(path, key) if path.exists() else None
            if _index is None:
                _index = _build_index()
                _write_index(path, key, _index)
        return _index


def index_dir() -> Path:
    """`$REWARDSMITH_HOME/cache/reasoning_gym` (read now, not at import)."""
    return home_dir() / "cache" / "reasoning_gym"


def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"No module named {PACKAGE!r}")
    return Path(list(spec.submodule_search_locations)[0])


def _index_key() -> str:
    """reasoning-gym's version and every file of the package (path, size, mtime)."""
    root = _package_dir()
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            stat = os.stat(os.path.join(folder, name))
            rel = os.path.relpath(os.path.join(folder, name), root)
            files.append((rel, stat.st_size, stat.st_mtime_ns))
    try:
        version = importlib.metadata.version("reasoning-gym")
    except importlib.metadata.PackageNotFoundError:
        version = "-"
    blob = json.dumps([INDEX_FORMAT, str(root), version, files])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _build_index() -> dict[str, str]:
    factory = _import_whole()
    return {str(name): cls.__module__ for name, (cls, _config) in factory.DATASETS.items()}


def _read_index(path: Path, key: str) -> dict[str, str] | None:
    """The stored index when its key matches and every entry is a name and a module of the
    package, else None (with a warning: it is rebuilt)."""
    try:
        data = read_json(path, MAX_INDEX_BYTES)
    except InputError as exc:
        log.warning("reasoning-gym: dataset index %s unreadable (%s); rebuilding it", path, exc)
        return None
    index = data.get("index") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("key") != key
        or not isinstance(index, dict)
        or not all(
            isinstance(n, str) and isinstance(m, str) and _MODULE.fullmatch(m)
            for n, m in index.items()
        )
    ):
        log.warning("reasoning-gym: dataset index %s is not one for this install; rebuilding", path)
        return None
    return dict(index)


def _write_index(path: Path, key: str, index: Mapping[str, str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"key": key, "index": dict(index)}, sort_keys=True))
    except (InputError, OSError) as exc:  # a read-only home: the next start imports it all
        log.warning("reasoning-gym: dataset index not written (%s)", exc)


def _import_alone(module: str) -> Any:
    """Import `module` with the packages above it pending (see `_pending_package`); returns
    `reasoning_gym.factory` (None when the import fails)."""
    parts = module.split(".")
    try:
        for depth in range(1, len(parts)):
            _pending_package(".".join(parts[:depth]))
        importlib.import_module(module)
    except Exception as exc:  # a module that needs its package's __init__: import it whole
        log.info("reasoning-gym: %s cannot be imported alone (%s)", module, exc)
        return None
    return sys.modules.get(f"{PACKAGE}.factory")


def _pending_package(name: str) -> None:
    """Put package `name` in `sys.modules` as the module object an import would make, with
    its `__init__` not run yet (`_complete` imports the package whole on the first name it
    lacks that is no submodule); nothing when
    the package is imported already."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError(f"No package named {name!r}")
    package = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str) -> Any:  # the module attribute hook (PEP 562)
        if attr.startswith("__") and attr != "__version__" and attr != "__all__":
            raise AttributeError(attr)  # probes (`__wrapped__`...) do not import everything
        if importlib.util.find_spec(f"{name}.{attr}") is not None:
            # a submodule (`from reasoning_gym import utils` in a dataset's module): import
            # it, as that statement does; it needs no other module's __init__
            return importlib.import_module(f"{name}.{attr}")
        with _lock:
            if name in _pending:
                _complete()
        if attr in package.__dict__:
            return package.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    package.__dict__["__getattr__"] = __getattr__
    _pending[name] = package
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:  # as an import binds a subpackage on its parent
        setattr(sys.modules[parent], child, package)


def _complete() -> None:
    """Import reasoning-gym whole, as `import reasoning_gym` does: the pending packages are
    dropped and the package imported in its own order (its modules import each other in a
    cycle that only that order resolves); the modules imported already are reused, so each
    dataset is registered once. Code that kept a pending package reads the real one."""
    with _lock:
        pending = dict(_pending)
        _pending.clear()
        for name in pending:
            sys.modules.pop(name, None)
        importlib.import_module(PACKAGE)
        # an import binds each submodule on its package when it loads it; those loaded under
        # a pending package are bound on the real one (`reasoning_gym.factory`)
        for name in sorted(n for n in sys.modules if n.startswith(PACKAGE + ".")):
            parent, _, child = name.rpartition(".")
            module, above = sys.modules[name], sys.modules.get(parent)
            if isinstance(above, types.ModuleType) and child not in vars(above):
                setattr(above, child, module)
        for name, package in pending.items():
            real = importlib.import_module(name)
            package.__dict__["__getattr__"] = functools.partial(getattr, real)
