"""The farm policy file: a trained farm scorer and what is needed to run it.

The policy file's format (``sched.learn.policy.policy_file``: a ``torch.save`` of plain containers
and tensors, read with ``weights_only=True`` after its size and every record's CRC-32 are checked,
so that loading never executes code) under its own ``format``, :data:`FORMAT`: a farm scorer reads
other features (``sched.learn.farm.decide``) and is not a policy of the single-queue settings.
``meta``: ``arch`` (the scorer's: hidden width, top_k, atc_prior, prior_scale), ``atc_k``,
``p_ref``, ``profile`` (168 hourly loads), ``task_features`` and ``global_features`` (this
version's), ``config_hash``, the training's settings and validation scores. Each field and every
tensor (names, shapes, dtypes against the farm scorer's, finite, of magnitude at most
``MAX_POLICY_WEIGHT``) is checked before anything is built; anything else is a
:class:`FarmPolicyError` naming the file and the field or tensor.
"""

import io

import torch

from sched.errors import shorten
from sched.files import atomic_path
from sched.learn.farm import decide, scorer
from sched.learn.policy import policy_file as PF
from sched.limits import MAX_POLICY_WEIGHT

FORMAT = "render-queue-sched/farm-policy"
VERSION = 1
REQUIRED_META = ("arch", "atc_k", "p_ref", "profile", "task_features", "global_features", "config_hash")


class FarmPolicyError(PF.PolicyFileError):
    """A farm policy file is missing, unreadable or has unexpected contents."""


class FarmPolicy:
    """A loaded farm policy: its network (eval mode), ``meta``, and its compiled form :attr:`knet`."""

    def __init__(self, net, meta):
        self.net = net.eval()
        self.meta = meta
        self.knet = scorer.compiled(net, meta["atc_k"], meta["p_ref"], meta["profile"])


def arch(hidden, top_k, prior_scale, atc_prior=True):
    """The ``meta.arch`` of a farm scorer (``name`` the scorer's: the policy file's checks read it)."""
    return {
        "name": "scorer",
        "hidden": int(hidden),
        "atc_prior": bool(atc_prior),
        "prior_scale": float(prior_scale),
        "top_k": int(top_k),
    }


def build(a):
    """The farm scorer of the architecture dict ``a``."""
    return scorer.network(a["hidden"], a["top_k"], a["prior_scale"], a["atc_prior"])


def save(path, net, meta):
    """Write a farm policy file atomically (the same weights give the same bytes)."""
    blob = {
        "format": FORMAT,
        "version": VERSION,
        "meta": meta,
        "state_dict": {k: v.detach().cpu().float() for k, v in net.state_dict().items()},
    }
    buf = io.BytesIO()
    torch.save(blob, buf)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(buf.getvalue())


def load(path):
    """Read a farm policy file without executing code; :class:`FarmPolicyError` on anything unexpected."""
    try:
        data = PF.read_checked(path)
    except PF.PolicyFileError as exc:
        raise FarmPolicyError(str(exc)) from None
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle refusals, truncated files, not a torch file
        raise FarmPolicyError(f"{path}: not a readable farm policy file ({type(exc).__name__})") from None
    if not isinstance(blob, dict):
        raise FarmPolicyError(f"{path}: not a farm policy file")
    if blob.get("format") != FORMAT:
        got = shorten(blob.get("format"))
        raise FarmPolicyError(f"{path}: field format: not a farm policy file, got {got}")
    if blob.get("version") != VERSION:
        raise FarmPolicyError(
            f"{path}: field version: expected {VERSION}, got {shorten(blob.get('version'))}"
        )
    meta = blob.get("meta")
    _check_meta(path, meta)
    net = build(meta["arch"])
    net.load_state_dict(_check_weights(path, net, blob.get("state_dict")))
    return FarmPolicy(net, meta)


def _check_meta(path, meta):
    try:
        if not isinstance(meta, dict):
            raise PF._bad(path, "meta", "expected a mapping", meta)
        missing = [k for k in REQUIRED_META if k not in meta]
        if missing:
            raise FarmPolicyError(f"{path}: farm policy file lacks meta.{missing[0]}")
        PF._check_arch(path, meta["arch"])
        for key in ("atc_k", "p_ref"):
            PF._positive(path, f"meta.{key}", meta[key])
        PF._check_profile(path, meta["profile"])
    except FarmPolicyError:
        raise
    except PF.PolicyFileError as exc:
        raise FarmPolicyError(str(exc)) from None
    for key, want in (("task_features", decide.TASK_FEATURES), ("global_features", decide.GLOBAL_FEATURES)):
        if not isinstance(meta[key], list) or list(meta[key]) != list(want):
            raise FarmPolicyError(
                f"{path}: field meta.{key}: trained on other features, got {shorten(meta[key])}; "
                "retrain it with this version"
            )


def _check_weights(path, net, state):
    """``state`` if its tensors are exactly ``net``'s (names, shapes), float32, finite and of
    magnitude at most MAX_POLICY_WEIGHT; else FarmPolicyError naming the tensor."""
    if not isinstance(state, dict):
        raise FarmPolicyError(f"{path}: field state_dict: expected a mapping of tensors")
    want = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    for name in state:
        if name not in want:
            raise FarmPolicyError(
                f"{path}: weights do not fit the farm scorer: unexpected tensor {shorten(name)}"
            )
    for name, shape in want.items():
        t = state.get(name)
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.dtype != torch.float32:
            raise FarmPolicyError(f"{path}: tensor {name}: missing, or not a dense float32 tensor")
        if tuple(t.shape) != shape:
            raise FarmPolicyError(
                f"{path}: tensor {name} has shape {list(t.shape)}, the scorer's is {list(shape)}"
            )
        if not bool(torch.isfinite(t).all()) or (t.numel() and float(t.abs().max()) > MAX_POLICY_WEIGHT):
            raise FarmPolicyError(
                f"{path}: tensor {name}: weights must be finite and of magnitude at most "
                f"{MAX_POLICY_WEIGHT:g} (sched.limits.MAX_POLICY_WEIGHT)"
            )
    return state
