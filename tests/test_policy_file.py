"""Policy files: crafted metadata and weights are refused in one line, before any network is built.

Each case starts from a small, well-formed policy file (built here, not
trained) and changes one thing, as a careless or hostile user would.
"""

import math
import resource
import subprocess
import sys
import zipfile

import pytest
import torch

from sched.learn.policy import features as F
from sched.learn.policy import networks as N
from sched.learn.policy import policy_file as PF
from sched.limits import MAX_POLICY_HIDDEN

from .conftest import ROOT

MEMORY_CAP = 1536 * 1024**2  # bytes of address space the subprocess may take


def small_meta(name="scorer", hidden=8):
    return {
        "arch": {"name": name, "hidden": hidden, "atc_prior": True, "prior_scale": 3.0, "top_k": 16},
        "atc_k": 2.0,
        "p_ref": 80.0,
        "profile": [0.85] * 168,
        "task_features": list(F.TASK_FEATURES),
        "global_features": list(F.GLOBAL_FEATURES),
        "config_hash": "0123456789abcdef",
    }


def write_policy(path, name="scorer", hidden=8):
    torch.manual_seed(0)
    meta = small_meta(name, hidden)
    PF.save(path, N.build(meta["arch"]), meta)
    return path


@pytest.fixture
def good(tmp_path):
    return write_policy(tmp_path / "good-scorer.pt")


def craft(good, edit, name="crafted.pt"):
    blob = torch.load(good, weights_only=True)
    edit(blob)
    path = good.parent / name
    torch.save(blob, path)
    return path


def meta_set(key, value):
    def edit(blob):
        blob["meta"][key] = value

    return edit


def arch_set(key, value):
    def edit(blob):
        blob["meta"]["arch"][key] = value

    return edit


def tensor_set(key, change):
    def edit(blob):
        sd = blob["state_dict"]
        name = next(k for k in sd if k.startswith(key))
        sd[name] = change(sd[name].clone())

    return edit


def poke(value):
    def change(t):
        t.view(-1)[0] = value
        return t

    return change


def drop(key):
    def edit(blob):
        del blob["state_dict"][next(k for k in blob["state_dict"] if k.startswith(key))]

    return edit


class Built(AssertionError):
    """Raised by the patched ``build``: the network was built before the file was checked."""


CRAFTED = [
    # (edit, the field or tensor the message names, and why)
    (meta_set("arch", "scorer"), "meta.arch", "expected a mapping"),
    (meta_set("arch", ["scorer", 8]), "meta.arch", "expected a mapping"),
    (arch_set("name", "transformer"), "meta.arch.name", "transformer"),
    (arch_set("name", ["scorer"]), "meta.arch.name", "scorer"),
    (arch_set("hidden", 12000), "meta.arch.hidden", "12000"),
    (arch_set("hidden", 10**30), "meta.arch.hidden", str(MAX_POLICY_HIDDEN)),
    (arch_set("hidden", 0), "meta.arch.hidden", "0"),
    (arch_set("hidden", "8"), "meta.arch.hidden", "'8'"),
    (arch_set("hidden", 8.5), "meta.arch.hidden", "8.5"),
    (arch_set("hidden", True), "meta.arch.hidden", "True"),
    (arch_set("hidden", 16), "actor.0.weight", "shape"),  # allowed, but the weights are 8 wide
    (arch_set("atc_prior", "yes"), "meta.arch.atc_prior", "'yes'"),
    (arch_set("prior_scale", float("nan")), "meta.arch.prior_scale", "nan"),
    (arch_set("prior_scale", -1.0), "meta.arch.prior_scale", "-1.0"),
    (arch_set("top_k", -1), "meta.arch.top_k", "-1"),
    (arch_set("top_k", 2**70), "meta.arch.top_k", "top_k"),
    (meta_set("atc_k", -2.0), "meta.atc_k", "-2.0"),
    (meta_set("atc_k", 0), "meta.atc_k", "0"),
    (meta_set("atc_k", float("nan")), "meta.atc_k", "nan"),
    (meta_set("atc_k", float("inf")), "meta.atc_k", "inf"),
    (meta_set("atc_k", "2"), "meta.atc_k", "'2'"),
    (meta_set("p_ref", 0.0), "meta.p_ref", "0.0"),
    (meta_set("profile", 0.85), "meta.profile", "168 hourly loads"),
    (meta_set("profile", [0.85] * 167), "meta.profile", "168 hourly loads"),
    (meta_set("profile", [0.85] * 167 + [float("nan")]), "meta.profile", "nan"),
    (meta_set("profile", [0.85] * 167 + [-0.1]), "meta.profile", "-0.1"),
    (meta_set("profile", [0.85] * 167 + [True]), "meta.profile", "True"),
    (meta_set("profile", [0.85] * 167 + ["1"]), "meta.profile", "'1'"),
    (meta_set("task_features", 5), "meta.task_features", "5"),
    (meta_set("global_features", "log_qlen"), "meta.global_features", "log_qlen"),
    (meta_set("config_hash", None), "meta.config_hash", "None"),
    (lambda b: b.__setitem__("meta", "x"), "meta", "mapping"),
    (lambda b: b.__setitem__("state_dict", [1, 2]), "state_dict", "list"),
    (drop("actor.2.weight"), "actor.2.weight", "missing"),
    (tensor_set("actor.2.weight", lambda t: t[:-1]), "actor.2.weight", "shape"),
    (tensor_set("actor.0.bias", lambda t: t.to(torch.int64)), "actor.0.bias", "int64"),
    (tensor_set("actor.2.weight", poke(float("nan"))), "actor.2.weight", "finite"),
    (tensor_set("actor.4.bias", poke(float("inf"))), "actor.4.bias", "finite"),
    (tensor_set("critic.0.weight", poke(-float("inf"))), "critic.0.weight", "finite"),
    (tensor_set("actor.0.weight", poke(1e30)), "actor.0.weight", "1e+06"),
    (lambda b: b["state_dict"].__setitem__("extra", torch.zeros(1)), "extra", "unexpected"),
    (lambda b: b["state_dict"].__setitem__("actor.0.bias", [0.0] * 8), "actor.0.bias", "list"),
]


@pytest.mark.parametrize("edit, field, why", CRAFTED)
def test_crafted_policy_files_are_refused_before_building(good, edit, field, why, monkeypatch):
    path = craft(good, edit)

    def build(arch):
        raise Built(f"build({arch!r}) was called before the file was checked")

    monkeypatch.setattr(PF, "build", build)
    with pytest.raises(PF.PolicyFileError) as exc:
        PF.load(path)
    msg = str(exc.value)
    assert len(msg.splitlines()) == 1 and len(msg) < 400, msg
    assert str(path) in msg and field in msg and why in msg, msg


def test_a_good_file_loads_and_builds_once(good, monkeypatch):
    calls = []
    real = PF.build
    monkeypatch.setattr(PF, "build", lambda arch: calls.append(arch) or real(arch))
    policy = PF.load(good)
    assert len(calls) == 1
    want = torch.load(good, weights_only=True)["state_dict"]
    got = policy.net.state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)


def test_whole_floats_in_the_architecture_load(good):
    # the config schema's "integer" accepts 64.0, and training stores it as given
    path = craft(good, lambda b: b["meta"]["arch"].update(hidden=8.0, top_k=16.0))
    assert PF.load(path).net.top_k == 16


def test_the_largest_allowed_network_loads(tmp_path):
    path = write_policy(tmp_path / "wide.pt", "scorer", MAX_POLICY_HIDDEN)
    assert PF.load(path).meta["arch"]["hidden"] == MAX_POLICY_HIDDEN


def test_a_huge_hidden_size_is_refused_quickly_in_little_memory(tmp_path):
    # The probe of issue 13: hidden = 12000 in a 60 KB file built a 12000-wide
    # network (45 s, 2.6 GB) before the weights were compared. Under a memory
    # cap the old code fails in build; the check names the field instead.
    path = write_policy(tmp_path / "big.pt", "scorer", 64)
    blob = torch.load(path, weights_only=True)
    blob["meta"]["arch"]["hidden"] = 12000
    torch.save(blob, path)
    code = "import sys; from sched.learn.policy.policy_file import load; load(sys.argv[1])"
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP)),
    )
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("sched.learn.policy.policy_file.PolicyFileError:"), out.stderr[-2000:]
    assert "meta.arch.hidden" in last and "12000" in last, last


def test_a_file_too_large_is_refused_before_reading(tmp_path, monkeypatch):
    path = write_policy(tmp_path / "p.pt")
    monkeypatch.setattr(PF, "MAX_POLICY_BYTES", path.stat().st_size - 1)
    monkeypatch.setattr(PF.torch, "load", lambda *a, **k: pytest.fail("torch.load called"))
    with pytest.raises(PF.PolicyFileError, match=r"p\.pt: .*bytes"):
        PF.load(path)


def test_contents_that_unpack_too_large_are_refused_before_reading(tmp_path, monkeypatch):
    # a small file whose compressed entries unpack past the limit (a zip bomb)
    good = write_policy(tmp_path / "p.pt")
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("p/zeros", bytes(4 * 1024**2))
    monkeypatch.setattr(PF, "MAX_POLICY_BYTES", 1024**2)
    assert bomb.stat().st_size < 1024**2
    monkeypatch.setattr(PF.torch, "load", lambda *a, **k: pytest.fail("torch.load called"))
    with pytest.raises(PF.PolicyFileError, match=r"bomb\.pt: .*unpacked"):
        PF.load(bomb)


def test_non_finite_weights_never_reach_rank(tmp_path, good):
    # Before: NaN weights gave ATC's order, labelled as the PPO policy.
    from sched import RankInputError, rank

    path = craft(good, tensor_set("actor.2.weight", poke(float("nan"))), "nan.pt")
    tasks = [{"id": i, "estimate_s": 10.0 + i, "weight": 1.0, "due": 30.0 * i} for i in range(5)]
    c = {"rank": {"winner": str(tmp_path / "w.json"), "tuned": str(tmp_path / "t.json")}}
    with pytest.raises(RankInputError, match=r"nan\.pt: .*actor\.2\.weight.*finite"):
        rank(tasks, now=0.0, policy="ppo", policy_file=path, config=c)
    assert math.isnan(torch.load(path, weights_only=True)["state_dict"]["actor.2.weight"][0, 0])


def test_the_same_weights_give_the_same_bytes(tmp_path):
    """The zip inside a policy file is rooted at a fixed name, not at the temporary file's."""
    a = write_policy(tmp_path / "a.pt")
    b = write_policy(tmp_path / "other-name.pt")
    assert a.read_bytes() == b.read_bytes()


def test_a_flat_policy_file_is_refused_naming_the_field(tmp_path, good):
    path = craft(good, lambda blob: blob["meta"]["arch"].update(name="flat"))
    with pytest.raises(
        PF.PolicyFileError, match="field meta.arch.name: unknown architecture; expected one of scorer"
    ):
        PF.load(path)


def test_a_version_2_policy_file_is_refused_naming_the_version(tmp_path, good):
    """Version 2 had the constant ``load`` feature, not the time of week: retrain it."""
    blob = torch.load(good, weights_only=True)
    meta = dict(blob["meta"])
    meta.pop("profile")
    meta["load"] = 0.85
    torch.save(dict(blob, version=2, meta=meta), tmp_path / "v2.pt")
    refused = r"policy file version 2, expected 3 \(made before the time-of-week features: retrain it"
    with pytest.raises(PF.PolicyFileError, match=refused):
        PF.load(tmp_path / "v2.pt")


def rewrite_in_place(path, data):
    """Write ``data`` over ``path``'s bytes in place (same inode, same size) and restore its
    modification time, as ``cp -p`` or a careful editor would: only the change time (ctime)
    moves. Retried until the filesystem's clock shows it moved (a coarse clock may need a tick)."""
    import os
    import time

    before = os.stat(path)
    assert len(data) == before.st_size  # the premise: the size cannot tell either
    while True:
        with open(path, "r+b") as f:
            f.write(data)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        if after.st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.002)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )


def test_the_policy_cache_sees_a_rewrite_that_restores_the_mtime(tmp_path):
    """Issue 32, item 14: the cache key has the change time (and the inode), not only the size
    and modification time."""
    path = write_policy(tmp_path / "p.pt")
    first = PF.load_cached(path).net.state_dict()
    torch.manual_seed(1)
    other = tmp_path / "other.pt"
    net = N.build(small_meta()["arch"])
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    PF.save(other, net, small_meta())
    rewrite_in_place(path, other.read_bytes())
    got = PF.load_cached(path).net.state_dict()
    want = PF.load(other).net.state_dict()
    assert all(torch.equal(got[k], want[k]) for k in want)
    assert not all(torch.equal(got[k], first[k]) for k in first)
