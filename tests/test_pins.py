"""The pinned code paths (sched/evidence/determinism.py) take effect: on this machine, a result computed
with the pins equals the one computed with the processor capped to the pinned path.

Each case runs in a fresh interpreter (the pins must be set before torch and numba load), with
the environment of a user who set nothing, or of a processor capped to AVX2 by each library's
own switch (MKL_ENABLE_INSTRUCTIONS, ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, a Haswell target
for numba), or with the pins turned off (SCHED_UNPINNED=1).
"""

import json
import os
import platform
import subprocess
import sys

import pytest

from sched.evidence import determinism

from .conftest import ROOT

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the x86-64 pins (docs/workflow.md: aarch64)",
)

#: A few steps of training a small tanh network with Adam (MKL's sgemm, ATen's tanh and Adam), and
#: a compiled reassociated sum and dot product (the decision kernel's kind of loop); prints digests.
PROBE = r"""
import hashlib, json, os
import sched  # the pins, before torch and numba
import numpy as np, numba, torch
from sched.learn.policy.kernel import _SUMS

torch.manual_seed(0)
torch.set_num_threads(1)
net = torch.nn.Sequential(torch.nn.Linear(73, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                          torch.nn.Linear(64, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.randn(512, 73)
for _ in range(30):
    loss = net(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in net.parameters())).hexdigest()

@numba.njit(fastmath=_SUMS)
def dots(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s

rng = np.random.default_rng(1)
vals = [dots(rng.standard_normal(n), rng.standard_normal(n)).hex() for n in (37, 1001, 4099)]
asm = next(iter(dots.inspect_asm().values()))
print(json.dumps({"weights": weights, "sums": vals, "zmm": "zmm" in asm,
                  "aten": torch.backends.cpu.get_cpu_capability(), "mkl_cbwr": os.environ.get("MKL_CBWR"),
                  "numba_cpu": numba.config.CPU_NAME}))
"""

#: The libraries' own caps to an AVX2 processor (an Intel Haswell), with the pins off.
CAPPED = {
    determinism.UNPINNED: "1",
    "MKL_CBWR": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NUMBA_CPU_NAME": "haswell",
    "NUMBA_CPU_FEATURES": "",
}


def _probe(**env):
    base = {
        k: v for k, v in os.environ.items() if k not in dict(determinism.X86_64) and k != determinism.UNPINNED
    }
    base.pop("MKL_ENABLE_INSTRUCTIONS", None)
    r = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**base, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs():
    return {"pinned": _probe(), "capped": _probe(**CAPPED), "unpinned": _probe(**{determinism.UNPINNED: "1"})}


def _has(flag):
    try:
        return flag in open("/proc/cpuinfo").read().split()
    except OSError:
        return False


def test_every_pin_is_in_force_after_import_sched(runs):
    p = runs["pinned"]
    assert p["mkl_cbwr"] == "AVX2"
    assert p["aten"] == "AVX2"
    assert p["numba_cpu"] == "x86-64-v3"
    assert p["zmm"] is False  # no AVX-512 register in the compiled sums, whatever the host has


def test_the_pinned_result_is_the_result_of_a_processor_capped_to_avx2(runs):
    assert runs["pinned"]["weights"] == runs["capped"]["weights"]
    assert runs["pinned"]["sums"] == runs["capped"]["sums"]


def test_without_the_pins_this_processor_takes_its_own_paths(runs):
    u = runs["unpinned"]
    assert u["mkl_cbwr"] is None and u["numba_cpu"] is None
    if not _has("avx512f"):
        pytest.skip("no AVX-512 here: the unpinned paths may be the pinned ones")
    assert u["aten"] == "AVX512" and u["zmm"] is True
    # MKL's own path on this processor trains other weights: the pin is what makes them equal
    assert u["weights"] != runs["pinned"]["weights"]
