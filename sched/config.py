"""Load ``config.yaml`` and validate it against the workflow's JSON schema.

The schema (``workflow/schemas/config.schema.yaml``, reachable from the package
as ``sched/config.schema.yaml``) is the single description of every setting and
its default. Snakemake validates the config with ``snakemake.utils.validate``;
the command line validates the same file with the same schema here, filling in
defaults the same way, then adds the checks a schema cannot express (shares
that sum to one, disjoint seed ranges, distinct bench-log columns: ``sched.config_checks``;
``ConfigError`` is imported from here).

The result is one frozen :class:`Config`: per-section :class:`Record` objects read by
attribute (``cfg.scenario.machines``), never changed in place; a variant is made with
:meth:`Config.replace`, which validates again. Values derived from several settings live
here too: :func:`seed_range`, :func:`under_root`, :func:`config_hash`,
:func:`training_hash`, :func:`training_atc_k`.
"""

import copy
import functools
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from sched.config_checks import ConfigError, check_finite, check_semantics, field_of
from sched.errors import shorten  # noqa: F401  (shorten: also imported from here)
from sched.limits import MAX_YAML_BYTES, SHOWN_CHARS

SCHEMA_PATH = Path(__file__).resolve().with_name("config.schema.yaml")
DEFAULT_CONFIG = "config.yaml"
#: The environment variable naming the config file when no --config / config= is given.
CONFIG_ENV = "SCHED_CONFIG"


def load_yaml(path, error=None):
    """Parse a YAML file safely (:func:`sched.formats.yaml_input.parse`): no code, a size limit, no
    alias bombs, no key given twice, no deep nesting. The file is refused past
    ``MAX_YAML_BYTES`` bytes. Raises ``error`` (default :class:`ConfigError`) naming the file.
    """
    from sched.files import read_text
    from sched.formats.yaml_input import parse

    error = error or ConfigError
    p = Path(path)
    text = read_text(p, error, limit=MAX_YAML_BYTES)  # a folder, a pipe, a huge file: one error
    return parse(text, str(p), error)


@functools.cache
def _schema():
    # parsed once per process: a validation took 55 ms, most of it reading this file again
    from sched.formats.yaml_input import parse

    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return parse(fh.read(), str(SCHEMA_PATH), ConfigError)


def load_schema():
    """The config schema, as a new mapping each call (the file is read once per process)."""
    return copy.deepcopy(_schema())


@functools.cache
def _validator():
    """The default-filling validator of the schema, built once (it never changes the schema)."""
    return _default_filling_validator(_schema())


def schema_defaults(section):
    """The schema's default of each setting of ``section`` (a top-level section's name), as
    :func:`validate_config` fills them in (settings without a default are left out)."""
    props = load_schema()["properties"][section]["properties"]
    return {k: copy.deepcopy(p["default"]) for k, p in props.items() if "default" in p}


def _default_filling_validator(schema):
    # The jsonschema FAQ recipe, as snakemake.utils.validate uses it, with the
    # defaults deep-copied so that filling one config never mutates the schema.
    from jsonschema import Draft202012Validator, validators

    base = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, sub):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from base(validator, properties, instance, sub)

    cls = validators.extend(Draft202012Validator, {"properties": set_defaults})
    return cls(schema)


def _freeze(value, path):
    if isinstance(value, Mapping):
        return Record(value, path)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v, f"{path}[{i}]") for i, v in enumerate(value))
    return value


def thawed(value):
    """A plain, mutable copy of a frozen value (mappings as dicts, tuples as lists), e.g. to
    write it as JSON: a config :class:`Record`, or the scenario model's read-only fields."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thawed(v) for v in value]
    return value


#: What a dict or a list would change in place: a Record says it is frozen instead.
_MUTATORS = ("update", "pop", "popitem", "setdefault", "clear", "append", "extend")


class Record(Mapping):
    """A frozen section of a validated config: its settings as attributes.

    Its fields are the schema's (a section's defaults filled in by the schema alone); a
    free-form map of the schema (``scenario.kinds``, ``scenario.priorities``) is a Record
    too, keyed by its own names. Lists are tuples. It reads like a mapping as well
    (``rec["name"]``, ``rec.get``, iteration), for code that walks settings generically;
    :meth:`to_dict` gives plain, mutable data (for JSON, YAML and hashes).
    """

    __slots__ = ("_data", "_path")

    def __init__(self, data, path=""):
        object.__setattr__(self, "_path", path)
        object.__setattr__(
            self, "_data", {k: _freeze(v, f"{path}.{k}" if path else k) for k, v in data.items()}
        )

    def __getattr__(self, name):
        try:
            return self._data[name]
        except KeyError:
            where = self._path or "the config"
            if name in _MUTATORS:
                fix = "make a variant with Config.replace"
                raise AttributeError(f"{where} is frozen, it has no {name}(): {fix}") from None
            raise AttributeError(f"{where} has no setting {name!r}") from None

    def __setattr__(self, name, value):
        raise ConfigError(f"{self._path or 'the config'} is frozen: make a variant with Config.replace")

    __delattr__ = __setattr__

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return f"{type(self).__name__}({self.to_dict()!r})"

    def __eq__(self, other):
        if isinstance(other, Mapping):
            return self.to_dict() == thawed(other)
        return NotImplemented

    __hash__ = None

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (type(self), (self.to_dict(), self._path))

    def to_dict(self):
        """The record as plain dicts and lists (a new copy each call)."""
        return thawed(self)


def _merge(base, changes):
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value.to_dict() if isinstance(value, Record) else copy.deepcopy(value)
    return out


class Config(Record):
    """The validated config, frozen: one :class:`Record` per section (``cfg.scenario``, ``cfg.train``...)."""

    __slots__ = ()

    def __init__(self, data, path=""):
        super().__init__(data, "")

    def replace(self, changes=None, source="config", **sections):
        """A new Config with ``changes`` (nested mappings, merged key by key into this one's
        sections; a list or a value replaces) and ``sections`` (the same, by keyword), validated
        again (relative paths stay as they are)."""
        merged = _merge(self.to_dict(), {**(changes or {}), **sections})
        return validate_config(merged, source)


def validate_config(cfg, source="config", folder=None):
    """Validate ``cfg`` (a mapping, or a :class:`Config` to check again), fill in the
    schema's defaults, and return it as a frozen :class:`Config` (``cfg`` itself is left
    half-filled: use the result).

    ``folder``: resolve the relative paths against it (:func:`resolve_paths`)
    before the checks that read files (a machines CSV); None leaves them as
    written (relative to the working directory).

    Raises :class:`ConfigError` naming the field and the offending value.
    """
    if cfg is None:
        cfg = {}
    if isinstance(cfg, Record):
        cfg = cfg.to_dict()
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(cfg).__name__}")
    given = set(cfg)  # the sections the file sets; the schema's defaults fill the others
    check_finite(cfg, source)
    validator = _validator()
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise ConfigError(f"{source}: {field_of(e.absolute_path)}: {_message(e)}")
    if folder is not None:
        resolve_paths(cfg, folder)
    check_semantics(cfg, source, sections=given)
    return Config(cfg)


def _message(error):
    """jsonschema's message with the offending value cut short (it may be huge)."""
    text = repr(error.instance)
    message = error.message
    if len(text) > SHOWN_CHARS and text in message:
        message = message.replace(text, shorten(error.instance))
    if len(message) > 4 * SHOWN_CHARS:
        message = message[: 4 * SHOWN_CHARS - 3] + "..."
    return message


def config_path(path=None):
    """The config file a call names: ``path``, else the environment variable
    ``SCHED_CONFIG``, else ``./config.yaml`` when there is one; None: none (the
    schema's defaults). A file named by ``path`` or ``SCHED_CONFIG`` must exist."""
    if path is not None:
        return Path(path)
    env = os.environ.get(CONFIG_ENV)
    if env:
        if not Path(env).exists():
            raise ConfigError(f"{CONFIG_ENV}: config file {env} not found")
        return Path(env)
    return Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).exists() else None


def load_config(path=None):
    """Read and validate a config file, its relative paths resolved (:func:`resolve_paths`).

    ``path=None``: the file of :func:`config_path` (``SCHED_CONFIG``, else
    ``config.yaml`` from the current directory when there is one), else the
    schema's defaults (their relative paths then read from the current
    directory).
    """
    p = config_path(path)
    if p is None:
        return validate_config({}, "defaults", ".")
    if not p.exists():
        raise ConfigError(f"config file {p} not found")
    return validate_config(load_yaml(p), str(p), p.parent)


def _is_machines_csv(value, base):
    """A scenario.machines value naming a machines CSV (not a count or a spec), as
    sched.formats.machines_input reads it."""
    if not isinstance(value, str):
        return False
    t = value.strip()
    if not t or (t.isascii() and t.isdecimal()):
        return False
    return t.lower().endswith(".csv") or os.path.isfile(os.path.join(base, t))


def _is_policy_file(value):
    """A plan.base / plan.rollout value naming a policy file rather than a policy name."""
    return value.endswith(".pt") or "/" in value or os.sep in value


def resolve_paths(cfg, folder):
    """Resolve the relative paths of a validated config against ``folder`` (in place; returns it).

    The folder paths are relative to is ``folder / cfg["root"]`` (``root``
    defaults to ".": the config file's own folder; the workflow's per-step
    configs under results/config/ set it to the project root). The paths
    (PATH_FIELDS): scenario.calibration, scenario.workload, scenario.chunks.frames.fit, a machines CSV of
    scenario.machines or of a robustness setting, workload.history,
    calibration.bench, rank.winner, rank.tuned, rank.settings, rank.farm_settings, and a policy
    file of plan.base or plan.rollout. When that folder is the current
    directory the paths are left as written (so results record them as
    today); else relative ones become absolute, and ``root`` becomes that
    folder's absolute path (resolving again changes nothing). A config mapping
    passed to ``rank(config=...)`` is resolved against the current directory.
    """
    base = os.path.abspath(os.path.join(os.fspath(folder), cfg.get("root") or "."))
    if base == os.path.abspath(os.getcwd()):
        cfg["root"] = "."
        return cfg
    cfg["root"] = base

    def fix(p):
        return p if p is None or os.path.isabs(p) else os.path.normpath(os.path.join(base, p))

    sc = cfg["scenario"]
    for key in ("calibration", "workload"):
        sc[key] = fix(sc.get(key))
    frames = (sc.get("chunks") or {}).get("frames") or {}
    if frames.get("fit"):  # a frames fit (sched.data.jobs)
        frames["fit"] = fix(frames["fit"])
    if _is_machines_csv(sc["machines"], base):
        sc["machines"] = fix(sc["machines"].strip())
    for st in (cfg.get("robustness") or {}).get("settings") or []:
        if _is_machines_csv(st.get("machines"), base):
            st["machines"] = fix(st["machines"].strip())
    for section, key in (("workload", "history"), ("calibration", "bench")):
        cfg[section][key] = [fix(p) for p in cfg[section][key]]
    for key in ("winner", "tuned", "settings", "farm_settings"):
        cfg["rank"][key] = fix(cfg["rank"].get(key))
    for key in ("base", "rollout"):
        if _is_policy_file(cfg["plan"][key]):
            cfg["plan"][key] = fix(cfg["plan"][key])
    return cfg


def under_root(cfg, path):
    """``path`` (a path relative to the project root, as sched.layout gives them) under the
    config's resolved ``root`` (see :func:`resolve_paths`)."""
    root = cfg.get("root") or "."
    if root == "." or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(root, path))


def seed_range(cfg, split):
    """The seeds of ``split`` ('train', 'validation', 'test') as a Python range."""
    r = cfg["seeds"][split]
    return range(r["start"], r["start"] + r["count"])


def config_hash(cfg, sections=None):
    """Short stable hash of the config (or of some of its sections)."""
    data = thawed(cfg) if sections is None else {k: thawed(cfg.get(k)) for k in sections}
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


#: The sections a training's artefacts depend on (a policy file, a teacher's labels): what its
#: ``config_hash`` covers, so that a label or a policy of another scenario is refused.
TRAINING_SECTIONS = ("scenario", "rules", "seeds")


def training_hash(cfg):
    """The config hash a training's artefacts record and check (:data:`TRAINING_SECTIONS`)."""
    return config_hash(cfg, list(TRAINING_SECTIONS))


def training_atc_k(cfg, atc_k=None):
    """ATC's k of a training (its features, its prior, its teacher): the training's own
    ``atc_k`` when set, else the config's ``rules.atc_k``."""
    return float(atc_k if atc_k is not None else cfg.rules.atc_k)
