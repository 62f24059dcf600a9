"""The policy file: a trained network and what is needed to use it.

A ``torch.save`` of plain containers and tensors only: ``format``,
``version``, ``meta`` (architecture, feature names, ATC k, normalisers,
config hash, training arguments, validation scores) and ``state_dict`` (the
weights). It is read back with ``torch.load(..., weights_only=True)`` so that
loading never executes code, and checked against this version's features
and architectures before use.
"""

import dataclasses
import os

import torch

from sched.config import config_hash
from sched.errors import SchedError
from sched.files import atomic_path
from sched.learn import features as F
from sched.learn.networks import ENCODINGS, Policy, build
from sched.learn.vec_env import p_ref_of

FORMAT = "render-queue-sched/policy"
VERSION = 1
REQUIRED_META = ("arch", "atc_k", "p_ref", "load", "task_features", "global_features", "config_hash")


class PolicyFileError(SchedError):
    """A policy file is missing, unreadable or has unexpected contents."""


def arch_of(args):
    """The architecture dict of training arguments (``sched.learn.ppo.Args``), as :func:`build` reads it."""
    return {
        "name": args.architecture,
        "hidden": args.hidden,
        "atc_prior": args.atc_prior,
        "prior_scale": args.prior_scale,
        "top_k": args.top_k,
    }


def policy_meta(cfg, args):
    """The ``meta`` of a policy trained with ``args`` on ``cfg`` (training adds the validation scores)."""
    enc = ENCODINGS[args.architecture]
    return {
        "arch": arch_of(args),
        "atc_k": float(args.atc_k if args.atc_k is not None else cfg["rules"]["atc_k"]),
        "p_ref": p_ref_of(cfg),
        "load": float(cfg["scenario"]["load"]),
        "task_features": list(F.TASK_FEATURES if enc == "tasks" else F.FLAT_TASK_FEATURES),
        "global_features": list(F.GLOBAL_FEATURES if enc == "tasks" else F.FLAT_GLOBAL_FEATURES),
        "config_hash": config_hash(cfg, ["scenario", "rules", "seeds"]),
        "train_args": dataclasses.asdict(args),
    }


def save(path, net, meta):
    """Write a policy file atomically."""
    blob = {
        "format": FORMAT,
        "version": VERSION,
        "meta": meta,
        "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
    }
    with atomic_path(path) as tmp:
        torch.save(blob, tmp)


def load(path):
    """Read a policy file without executing code; PolicyFileError on anything unexpected."""
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise PolicyFileError(f"{path}: policy file not found") from None
    except Exception as exc:  # pickle refusals, truncated files, not a torch file
        raise PolicyFileError(
            f"{path}: not a readable policy file ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''})"
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise PolicyFileError(f"{path}: not a render-queue-sched policy file (format field missing)")
    if blob.get("version") != VERSION:
        raise PolicyFileError(f"{path}: policy file version {blob.get('version')!r}, expected {VERSION}")
    meta = blob.get("meta")
    _check_meta(path, meta)
    try:
        net = build(meta["arch"])
        net.load_state_dict(blob["state_dict"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        raise PolicyFileError(
            f"{path}: weights do not fit the architecture: {str(exc).splitlines()[0][:200]}"
        ) from None
    return Policy(net, meta)


def _check_meta(path, meta):
    """PolicyFileError unless ``meta`` has every field and this version's features."""
    missing = [k for k in REQUIRED_META if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise PolicyFileError(f"{path}: policy file lacks {', '.join(missing)}")
    enc = ENCODINGS.get(meta["arch"].get("name"))
    if enc is None:
        raise PolicyFileError(f"{path}: unknown architecture {meta['arch'].get('name')!r}")
    flat = enc != "tasks"
    for key, want in (
        ("task_features", F.FLAT_TASK_FEATURES if flat else F.TASK_FEATURES),
        ("global_features", F.FLAT_GLOBAL_FEATURES if flat else F.GLOBAL_FEATURES),
    ):
        if list(meta[key]) != list(want):
            raise PolicyFileError(
                f"{path}: policy was trained on other {key} ({list(meta[key])}, "
                f"this version has {list(want)}); retrain it with this version"
            )


_CACHE = {}


def load_cached(path):
    """:func:`load`, remembered per file (path, size, modification time): a queue
    calling ``rank()`` many times reads and rebuilds the network once."""
    p = os.path.abspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise PolicyFileError(f"{path}: policy file not found") from None
    key = (p, st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load(path)
    return _CACHE[key]
