"""The policy file: a trained network and what is needed to use it.

A ``torch.save`` of plain containers and tensors only: ``format``,
``version``, ``meta`` (architecture, feature names, ATC k, normalisers,
config hash, training arguments, validation scores) and ``state_dict`` (the
weights). It is read back with ``torch.load(..., weights_only=True)`` so that
loading never executes code, and checked before anything is built from it:
the file's size (and its contents' once unpacked) against
``sched.limits.MAX_POLICY_BYTES``; every ``meta`` field's type and range
(the architecture a known name with a hidden width of at most
``MAX_POLICY_HIDDEN``; ``atc_k``, ``p_ref`` finite and > 0; ``profile``
168 finite numbers >= 0; this version's features); then every tensor's name, shape and dtype against the
architecture's (computed on torch's ``meta`` device, which allocates
nothing), and its values: finite, of magnitude at most ``MAX_POLICY_WEIGHT``.
Anything else is a :class:`PolicyFileError` naming the file and the field
or tensor.
"""

import io
import math
import os
import zipfile

import torch

from sched import files, setting
from sched.cache import Cache
from sched.config import shorten, training_atc_k, training_hash
from sched.data.model import scenario_model
from sched.errors import SchedError
from sched.files import atomic_path, file_problem
from sched.learn.env.vec_env import p_ref_of
from sched.learn.policy import features as F
from sched.learn.policy import networks
from sched.learn.policy.networks import ARCHITECTURES, Policy, build
from sched.limits import MAX_POLICY_BYTES, MAX_POLICY_HIDDEN, MAX_POLICY_WEIGHT

FORMAT = "render-queue-sched/policy"
#: 2: the decision is the compiled kernel's (sched.learn.policy.kernel), whose context pools the
#: candidates; a version-1 file's network was trained on a context over the whole queue.
#: 3: the time-of-week features: the meta holds the load ``profile`` (168 hourly loads, the
#: scenario model's ``load_profile``) in place of the constant ``load``.
VERSION = 3
REQUIRED_META = ("arch", "atc_k", "p_ref", "profile", "task_features", "global_features", "config_hash")
#: Why a file of an earlier version is refused.
_OLDER = {
    1: "made before the compiled decision",
    2: "made before the time-of-week features",
}


class PolicyFileError(SchedError):
    """A policy file is missing, unreadable or has unexpected contents."""


def arch_of(network):
    """The architecture dict of a training's network settings
    (:class:`~sched.learn.settings.NetworkSettings`), as :func:`build` reads it."""
    return {
        "name": network.architecture,
        "hidden": network.hidden,
        "atc_prior": network.atc_prior,
        "prior_scale": network.prior_scale,
        "top_k": network.top_k,
        "prior_rule": network.prior_rule,
        **({"wait": True} if network.wait else {}),  # only when on: other files keep their bytes
    }


def max_wait_of(cfg):
    """How long a learned policy's wait may hold a GPU since it freed: the delayed rules' bound,
    ``benchmark.waiting.max_wait_s`` (its schema default when the config has no ``waiting``)."""
    from sched.config import load_schema

    waiting = cfg["benchmark"].get("waiting")
    if waiting is None:
        props = load_schema()["properties"]["benchmark"]["properties"]["waiting"]["properties"]
        return float(props["max_wait_s"]["default"])
    return float(waiting["max_wait_s"])


#: Training arguments that say how a run ran, not what it computed: kept out of the file.
RUN_ONLY_ARGS = ("threads",)


def policy_meta(cfg, settings):
    """The ``meta`` of a policy trained with ``settings`` (``sched.learn.settings.Training``) on
    ``cfg`` (training adds the validation scores)."""
    model = scenario_model(cfg)
    return {
        "arch": arch_of(settings.network),
        "atc_k": training_atc_k(cfg, settings.network.atc_k),
        "p_ref": p_ref_of(model),
        "profile": [float(x) for x in model.load_profile()],
        "task_features": list(F.TASK_FEATURES),
        "global_features": list(F.GLOBAL_FEATURES),
        "config_hash": training_hash(cfg),
        # what trained it, less how many threads ran it: a run record's (sched.evidence.run_record), so
        # that the file's sha256, which verdicts bind, changes only with weights and settings
        "train_args": {k: v for k, v in settings.as_dict().items() if k not in RUN_ONLY_ARGS},
        "setting": setting.of_config(cfg),  # the farm it was trained for (rank()'s explanation)
        **({"max_wait_s": max_wait_of(cfg)} if settings.network.wait else {}),
    }


def mismatch(meta, want):
    """Why a policy file's ``meta`` cannot continue a training whose meta is ``want`` (another
    architecture or ATC k: its weights would mean something else), or None when it can."""
    if meta["arch"] != want["arch"] or float(meta["atc_k"]) != float(want["atc_k"]):
        return (
            f"its architecture or ATC k ({meta['arch']}, {meta['atc_k']}) is not this training's "
            f"({want['arch']}, {want['atc_k']})"
        )
    return None


def save(path, net, meta):
    """Write a policy file atomically."""
    blob = {
        "format": FORMAT,
        "version": VERSION,
        "meta": meta,
        "state_dict": {k: v.detach().cpu() for k, v in net.state_dict().items()},
    }
    buf = io.BytesIO()  # the zip's entries are rooted at a fixed name, not the temporary file's:
    torch.save(blob, buf)  # the same weights give the same bytes
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(buf.getvalue())


def load(path):
    """Read a policy file without executing code; PolicyFileError on anything unexpected.

    The one function that reads a policy file, whoever names it (``auto``, ``ppo-<S>``,
    ``--policy-file``, the benchmark, plan's base, the teacher, the report): its bytes are
    read once (:func:`read_checked`: a regular file within MAX_POLICY_BYTES, every record's
    CRC-32 verified), then unpickled from memory. Nothing is built before the metadata and the
    weights are checked against each other (see the module's docstring).
    """
    data = read_checked(path)
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle refusals, truncated files, not a torch file, too deep
        raise PolicyFileError(
            f"{path}: not a readable policy file ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''})"
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise PolicyFileError(f"{path}: not a render-queue-sched policy file (format field missing)")
    if blob.get("version") != VERSION:
        why = _OLDER.get(blob.get("version")) if type(blob.get("version")) is int else None
        hint = f" ({why}: retrain it with this version)" if why else ""
        raise PolicyFileError(
            f"{path}: field version: policy file version {shorten(blob.get('version'))}, "
            f"expected {VERSION}{hint}"
        )
    meta = blob.get("meta")
    state = blob.get("state_dict")
    _check_meta(path, meta)
    state = _check_weights(path, meta["arch"], state)
    try:
        net = build(meta["arch"])
        net.load_state_dict(state)
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        raise PolicyFileError(
            f"{path}: weights do not fit the architecture: {str(exc).splitlines()[0][:200]}"
        ) from None
    return Policy(net, meta)


def path_problem(path):
    """PolicyFileError naming ``path`` when it is no regular file (missing, a folder, a pipe or a
    device, a name the system refuses); None when it can be read. Every place a policy file
    can be named asks this before it chooses the file, so that a folder is never "not found"."""
    why = file_problem(path)
    if why is None:
        return None
    if why == "not found":
        return PolicyFileError(f"{path}: policy file not found")
    return PolicyFileError(f"{path}: {why.replace('not a file', 'not a policy file')}")


def _read_error(message):
    return PolicyFileError(message.replace(": file not found", ": policy file not found", 1))


def read_checked(path):
    """The bytes of policy file ``path``, read once through ``sched.files.read_bytes`` (a folder,
    a pipe, a device or a file over MAX_POLICY_BYTES refused, a FIFO without blocking), and
    checked as a zip archive: its records unpack to at most MAX_POLICY_BYTES, and each one's
    bytes, the weights' included, match the CRC-32 the archive stores for them (``torch.load``
    does not check it: a flipped bit would run). PolicyFileError naming the file otherwise."""
    data = files.read_bytes(path, _read_error, MAX_POLICY_BYTES)
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
        raise PolicyFileError(
            f"{path}: not a readable policy file (not a torch zip archive: {shorten(str(exc), 80)})"
        ) from None
    with z:
        infos = z.infolist()
        unpacked = sum(i.file_size for i in infos)
        if unpacked > MAX_POLICY_BYTES:
            raise PolicyFileError(
                f"{path}: {unpacked} bytes once unpacked, more than a policy file may hold "
                f"({MAX_POLICY_BYTES} bytes, sched.limits.MAX_POLICY_BYTES)"
            )
        for info in infos:
            try:
                with z.open(info) as fh:  # reading to the end checks the record's CRC-32
                    while fh.read(1 << 20):
                        pass
            except Exception as exc:  # BadZipFile (bad CRC-32, headers that disagree), zlib, EOF
                why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
                raise PolicyFileError(
                    f"{path}: damaged policy file: record {shorten(info.filename, 80)} fails its "
                    f"integrity check ({why}); it was changed after it was written"
                ) from None
    return data


def _bad(path, field, why, value):
    return PolicyFileError(f"{path}: field {field}: {why}, got {shorten(value)}")


def _is_whole(v):
    """An int, or a float with an integral value (the config schema's "integer" allows 64.0)."""
    if isinstance(v, float):
        return v.is_integer()
    return isinstance(v, int) and not isinstance(v, bool)


def _positive(path, field, v):
    """``v``, a finite number > 0 (not a bool), or PolicyFileError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
        raise _bad(path, field, "expected a finite number > 0", v)
    return v


def _check_arch(path, arch):
    """PolicyFileError unless ``arch`` is an architecture dict :func:`build` can use cheaply."""
    if not isinstance(arch, dict):
        raise _bad(path, "meta.arch", "expected a mapping (name, hidden, atc_prior, prior_scale)", arch)
    name = arch.get("name")
    if not isinstance(name, str) or name not in ARCHITECTURES:
        raise _bad(
            path, "meta.arch.name", f"unknown architecture; expected one of {', '.join(ARCHITECTURES)}", name
        )
    hidden = arch.get("hidden")
    if not _is_whole(hidden) or not 1 <= hidden <= MAX_POLICY_HIDDEN:
        raise _bad(
            path,
            "meta.arch.hidden",
            f"expected a whole number from 1 to {MAX_POLICY_HIDDEN} (sched.limits.MAX_POLICY_HIDDEN)",
            hidden,
        )
    if not isinstance(arch.get("atc_prior"), bool):
        raise _bad(path, "meta.arch.atc_prior", "expected true or false", arch.get("atc_prior"))
    _positive(path, "meta.arch.prior_scale", arch.get("prior_scale"))
    if arch.get("prior_rule", "atc") not in ("atc", "wmdd"):
        raise _bad(path, "meta.arch.prior_rule", "expected atc or wmdd", arch.get("prior_rule"))
    top_k = arch.get("top_k", 0)
    if not _is_whole(top_k) or not 0 <= top_k < 2**31:
        raise _bad(path, "meta.arch.top_k", "expected a whole number >= 0", top_k)
    if not isinstance(arch.get("wait", False), bool):
        raise _bad(path, "meta.arch.wait", "expected true or false", arch.get("wait"))


def _check_meta(path, meta):
    """PolicyFileError unless ``meta`` has every field, each of the right type and range,
    and this version's features."""
    if not isinstance(meta, dict):
        raise _bad(path, "meta", "expected a mapping", meta)
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise PolicyFileError(f"{path}: policy file lacks {', '.join(missing)}")
    _check_arch(path, meta["arch"])
    for key in ("atc_k", "p_ref") + (("max_wait_s",) if meta["arch"].get("wait") else ()):
        _positive(path, f"meta.{key}", meta.get(key))
    _check_profile(path, meta["profile"])
    if not isinstance(meta["config_hash"], str):
        raise _bad(path, "meta.config_hash", "expected text", meta["config_hash"])
    if meta.get("setting") is not None:  # absent from files of earlier versions
        try:
            meta["setting"] = setting.read(meta["setting"], "meta.setting")
        except setting.SettingError as exc:
            raise PolicyFileError(f"{path}: {exc}") from None
    for key, want in (("task_features", F.TASK_FEATURES), ("global_features", F.GLOBAL_FEATURES)):
        got = meta[key]
        if not isinstance(got, (list, tuple)) or not all(isinstance(f, str) for f in got):
            raise _bad(path, f"meta.{key}", "expected a list of feature names", got)
        if list(got) != list(want):
            raise PolicyFileError(
                f"{path}: policy was trained on other {key} ({shorten(list(got), 120)}, "
                f"this version has {list(want)}); retrain it with this version"
            )


def _check_profile(path, profile):
    """PolicyFileError unless ``profile`` is a list of 168 finite numbers >= 0 (not bools)."""
    ok = isinstance(profile, (list, tuple)) and len(profile) == 168
    if ok:
        for x in profile:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and x >= 0):
                raise _bad(path, "meta.profile", "expected 168 finite numbers >= 0 (hourly loads)", x)
        return
    raise _bad(path, "meta.profile", "expected a list of 168 hourly loads", profile)


def expected_tensors(arch):
    """{name: (shape, dtype)} of the weights of ``arch`` (checked by :func:`_check_arch`),
    from a network built on torch's ``meta`` device: no memory, no initialisation cost."""
    with torch.device("meta"):
        net = networks.build(arch)
    return {k: (tuple(v.shape), v.dtype) for k, v in net.state_dict().items()}


def _check_weights(path, arch, state):
    """``state``, if its tensors are exactly those of ``arch`` (names, shapes, dtypes),
    finite and of magnitude at most MAX_POLICY_WEIGHT; else PolicyFileError naming the tensor."""
    if not isinstance(state, dict):
        raise _bad(path, "state_dict", "expected a mapping of tensors", type(state).__name__)
    want = expected_tensors(arch)
    fit = f"{path}: weights do not fit the architecture"
    for name in state:
        if name not in want:
            raise PolicyFileError(f"{fit}: unexpected tensor {shorten(name)}")
    for name, (shape, dtype) in want.items():
        t = state.get(name)
        if t is None:
            raise PolicyFileError(f"{fit}: tensor {name} missing")
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            raise PolicyFileError(f"{fit}: {name} is a {type(t).__name__}, not a dense tensor")
        if tuple(t.shape) != shape:
            raise PolicyFileError(
                f"{fit}: tensor {name} has shape {list(t.shape)}, the architecture's is {list(shape)} "
                f"(meta.arch: {shorten(arch, 120)})"
            )
        if t.dtype != dtype:
            raise PolicyFileError(f"{fit}: tensor {name} has dtype {t.dtype}, expected {dtype}")
        if not bool(torch.isfinite(t).all()):
            raise PolicyFileError(f"{path}: tensor {name}: weights must be finite (it holds NaN or inf)")
        big = float(t.abs().max()) if t.numel() else 0.0
        if big > MAX_POLICY_WEIGHT:
            raise PolicyFileError(
                f"{path}: tensor {name}: a weight of magnitude {big:g}, above "
                f"{MAX_POLICY_WEIGHT:g} (sched.limits.MAX_POLICY_WEIGHT)"
            )
    return state


_CACHE = Cache(4)  # a few files in use at a time (a ppo policy, plan's base)


def _cache_key(path):
    """What :func:`load_cached` remembers a file by. ctime and inode too: a rewrite in place that
    restores the mtime (cp -p, os.utime) or a replacement of the same size still changes one."""
    p = os.path.abspath(path)
    st = os.stat(p)
    return (p, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def is_cached(path):
    """Whether :func:`load_cached` would return ``path``'s policy without reading it (a first
    load takes about a second: ``sched serve`` decides such a call off its event loop)."""
    try:
        return _cache_key(path) in _CACHE
    except (OSError, TypeError):
        return False


def load_cached(path):
    """:func:`load`, remembered per file (path, size, modification and change times, inode): a queue
    calling ``rank()`` many times reads and rebuilds the network once. Safe from
    threads: the cache is filled under a lock (checked again inside it), and a call
    returns the policy it loaded or found, never a read of the cache after the fact.
    A loaded policy is not changed afterwards (its compiled network is built once,
    under ``sched.learn.policy.kernel``'s lock)."""
    try:
        key = _cache_key(path)
    except (OSError, ValueError, TypeError):
        problem = path_problem(path)
        raise problem or PolicyFileError(f"{path}: cannot read the policy file") from None
    return _CACHE.get(key, lambda: load(path))
