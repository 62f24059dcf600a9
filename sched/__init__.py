"""Render-queue scheduler: calibrated simulator, dispatching rules and PPO.

``from sched import rank`` is the entry point a render queue calls; the other
modules are listed in the README.
"""
import sys
import types

__version__ = "0.1.0"

# `rank` is loaded on first use, so that `import sched` stays light (no numba,
# no pandas).
_LAZY = {"rank": "rank", "RankInputError": "RankInputError"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module("sched.rank"), _LAZY[name])
        setattr(sys.modules[__name__], name, value)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(types.ModuleType):
    # The function rank() lives in the module sched/rank.py, and importing a
    # submodule binds it on its package: `sched.rank` would become the module
    # once anything ran `from sched.rank import ...`, and `from sched import
    # rank` would then return a module instead of the function. Keep the
    # function there whatever the import order.
    def __setattr__(self, name, value):
        if name == "rank" and isinstance(value, types.ModuleType):
            value = value.rank
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
