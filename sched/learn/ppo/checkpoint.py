"""Training checkpoints, so that an interrupted run resumes where it stopped.

A checkpoint (``<policy file>.ckpt``) holds the network, the optimiser, the
torch generator, the whole simulator state with its seed stream, and the
run's :class:`RunProgress`: a run resumed with the same command ends with
the same result as an uninterrupted one. It is resumed only when its
fingerprint (config hash and training arguments) matches the new run's.

A checkpoint is read with ``torch.load(weights_only=True)``: it holds only
tensors, lists, dicts, strings and numbers (the simulator's numpy arrays are
stored as tensors), so a crafted file cannot run code when a run resumes. A
file that is not such a checkpoint is refused with one line
(:class:`CheckpointError`) naming it.
"""

import math
import pickle
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from sched.errors import SchedError
from sched.files import atomic_path

#: The keys a checkpoint holds.
KEYS = (
    "fingerprint",
    "iteration",
    "net",
    "optimizer",
    "torch_gen",
    "env",
    "rows",
    "best",
    "env_steps",
    "episodes",
    "wall",
    "recent",
)


class CheckpointError(SchedError):
    """A checkpoint file that cannot be resumed from; the message names it."""


#: Episodes in the running mean of the training log's episode weighted tardiness.
RECENT_EPISODES = 50


def _no_best():
    return {"score": math.inf, "iteration": 0, "state": None}


@dataclass
class RunProgress:
    """Where a training run stands: what a checkpoint keeps besides the states."""

    iteration: int = 0  # the last PPO iteration done (0: none yet)
    rows: list = field(default_factory=list)  # the training log's rows so far
    best: dict = field(default_factory=_no_best)  # best validation score, its iteration and weights
    env_steps: int = 0  # decisions taken in training scenarios
    episodes: int = 0  # training scenarios finished
    wall: float = 0.0  # seconds of training so far
    recent: list = field(default_factory=list)  # weighted tardiness of the last episodes

    def count(self, episodes, steps):
        """Add a rollout's ``steps`` decisions and its finished ``episodes`` (seed, load, total)."""
        self.env_steps += steps
        self.episodes += len(episodes)
        self.recent = (self.recent + [wt for _, _, wt in episodes])[-RECENT_EPISODES:]

    def keep_if_best(self, score, iteration, net):
        """Remember ``net``'s weights when ``score`` beats the best validation score so far."""
        if score < self.best["score"]:
            self.best = {
                "score": score,
                "iteration": iteration,
                "state": {k: v.detach().clone() for k, v in net.state_dict().items()},
            }


def path_for(policy_path):
    """The checkpoint of the run that writes ``policy_path``."""
    policy_path = Path(policy_path)
    return policy_path.with_name(policy_path.name + ".ckpt")


def fingerprint(meta, settings):
    """What must match for a checkpoint to be resumed: the config hash, the training settings
    (``sched.learn.settings.Training``) and the policy file PPO started from (its sha256; None
    without one)."""
    return {"config": meta["config_hash"], "args": settings.as_dict(), "init": meta.get("init_sha256")}


def save(path, fingerprint, progress, net, optimizer, gen, env):
    """Write a checkpoint atomically (a run killed while writing keeps the previous one)."""
    ck = {
        "fingerprint": fingerprint,
        "iteration": progress.iteration,
        "net": net.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_gen": gen.get_state(),
        "env": _tensors(env.get_state()),
        "rows": progress.rows,
        "best": progress.best,
        "env_steps": progress.env_steps,
        "episodes": progress.episodes,
        "wall": progress.wall,
        "recent": progress.recent,
    }
    with atomic_path(path) as tmp:
        torch.save(ck, tmp)


def load(path, fingerprint, net, optimizer, gen, env, log=print):
    """Restore the states from the checkpoint at ``path``; returns its :class:`RunProgress`.

    Returns None (and the states are untouched) when there is no checkpoint,
    or when it was made with another config or other arguments (said through ``log``).
    """
    path = Path(path)
    if not path.exists():
        return None
    ck = read(path)
    if ck["fingerprint"] != fingerprint:
        log(f"ignoring checkpoint {path}: made with another config or arguments")
        return None
    try:
        net.load_state_dict(ck["net"])
        optimizer.load_state_dict(ck["optimizer"])
        gen.set_state(ck["torch_gen"])
        env.set_state(_arrays(ck["env"]))
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise CheckpointError(
            f"{path}: not a checkpoint of this run ({_first_line(exc)}); {_ADVICE}"
        ) from None
    return RunProgress(
        ck["iteration"], ck["rows"], ck["best"], ck["env_steps"], ck["episodes"], ck["wall"], ck["recent"]
    )


_ADVICE = "delete it, or train with --fresh"


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:120]


def read(path):
    """The checkpoint dict at ``path``, read without running any code from it."""
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError) as exc:
        raise CheckpointError(f"{path}: not a readable checkpoint ({_first_line(exc)}); {_ADVICE}") from None
    if not isinstance(ck, dict) or set(ck) != set(KEYS):
        raise CheckpointError(f"{path}: not a training checkpoint (unexpected contents); {_ADVICE}")
    return ck


def _tensors(state):
    """The simulator's state with its numpy arrays as tensors (what weights_only loads)."""
    if isinstance(state, np.ndarray):
        return torch.from_numpy(state.copy())
    if isinstance(state, dict):
        return {k: _tensors(v) for k, v in state.items()}
    return state


def _arrays(state):
    """The inverse of :func:`_tensors`."""
    if isinstance(state, torch.Tensor):
        return state.numpy()
    if isinstance(state, dict):
        return {k: _arrays(v) for k, v in state.items()}
    return state
