"""Render-queue scheduler: calibrated simulator, dispatching rules and PPO.

``from sched import rank`` is the entry point a render queue calls. The floors, from the
bottom (docs/architecture.md):

* ``sim``: the simulator, the rules and the objective;
* ``data``: scenarios, the bench-log calibration and the queue's own history;
* ``learn``: learned policies, PPO and decision-time search;
* ``evaluate``: the benchmark; ``verdict``: what it concludes (``winner.json``);
  ``report``: ``rapport.md`` and its figures;
* ``ranking``: ``rank()``, the in-process decision;
* ``serve`` and ``farms``: ``rank()`` over HTTP, and into render farms; ``pipeline``: the
  workflow's plan (what each job reads, runs and writes), which the Snakemake files bind;
* ``commands`` with ``cli``: the ``sched`` command line, one module a subcommand;
* ``evidence``: the pinned code paths, the results' manifest and the run records (issue 45);
* ``formats``: the one parser of each text format read (CSV, JSON, YAML).

Modules of this folder: ``cache`` (the one locked cache), ``cli``, ``config`` (the one
frozen config), ``config_checks`` (what its schema cannot check), ``errors``, ``files``
(atomic writes), ``layout`` (every results path), ``limits`` (and the products of settings
they bound), ``setting`` (a benchmark's GPUs and load), ``sim_numba`` (the compiled core at
the path the contract names), ``threads``.
"""

import os
import sys

from sched.evidence import determinism

# Before anything loads torch or numba: the code paths that compute a result (sched/evidence/determinism.py).
determinism.pin()

__version__ = "0.1.0"


def _numba_cache_dir():
    """A numba cache folder named after a hash of this package's sources.

    numba's on-disk cache (``cache=True``) checks only the timestamp of the
    file a compiled function is defined in, not of the functions it calls in
    other files (the rule formulas in rules.py, the event loop in
    sim/core.py, ...): after an edit or an upgrade it would silently run the
    old code. Keying the folder on all the sources makes any change start a
    fresh cache. Folders of older sources are removed.
    """
    import hashlib
    import shutil

    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for folder, dirs, names in os.walk(here):  # top-down, so pruning dirs takes effect
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as fh:
                    digest.update(os.path.relpath(path, here).encode() + b"\0" + fh.read())
    tag = f"numba-{digest.hexdigest()[:16]}"
    base = os.path.join(here, "__pycache__")
    if not os.access(here, os.W_OK):
        base = os.path.join(os.path.expanduser("~"), ".cache", "render-queue-sched")
    for old in os.listdir(base) if os.path.isdir(base) else []:
        if old.startswith("numba-") and old != tag:
            shutil.rmtree(os.path.join(base, old), ignore_errors=True)
    return os.path.join(base, tag)


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _numba_cache_dir()
    if "numba" in sys.modules:  # numba read its settings already
        sys.modules["numba"].config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]

# `rank` is loaded on first use, so that `import sched` stays light (no numba,
# no pandas).
_LAZY = {"rank": "rank", "RankInputError": "RankInputError"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module("sched.ranking.ranker"), _LAZY[name])
        setattr(sys.modules[__name__], name, value)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
