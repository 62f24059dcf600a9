"""The code paths that compute a result, pinned: the same bytes on any x86-64 processor with AVX2.

A library that picks its code by processor (AVX-512 or AVX2, Intel or AMD) rounds the last
bit differently, and training amplifies that bit into other weights (issue 45: MKL's code
path alone trained other policies from the same labels). Each dispatcher is pinned here, by
environment variables that must be set before the library loads. ``sched/__init__.py`` calls
:func:`pin` first thing, so that every ``python -m sched`` process, every workflow job and
every ``import sched`` runs on the pinned paths:

* **MKL** (torch's BLAS on x86-64): ``MKL_CBWR=AVX2``, its conditional numerical
  reproducibility on the AVX2 branch, and ``MKL_DYNAMIC=FALSE``, so that MKL never lowers its
  thread count under load (CNR holds for a fixed thread count, which ``sched.threads`` fixes);
* **ATen** (torch's own vectorised kernels): ``ATEN_CPU_CAPABILITY=avx2``;
* **oneDNN**: ``ONEDNN_MAX_CPU_ISA=AVX2``;
* **numba** (the compiled simulator, the decision kernel): ``NUMBA_CPU_NAME=x86-64-v3`` with no
  extra features: the code LLVM generates, its vector width and so the order of a reassociated
  sum (``_SUMS`` in ``sched/learn/policy/kernel.py``) are those of the x86-64-v3 level (AVX2, FMA),
  whatever the host has beyond it.

On aarch64 numba is pinned to its ``generic`` target and the x86 pins do nothing: results
are reproducible from one aarch64 machine to another of the same libraries, not equal to
x86-64's (docs/workflow.md, "Reproducible to the bit").

``SCHED_UNPINNED=1`` leaves every path to the processor: only to measure what the pins cost
(``benchmarks/pins_cost.py``) or show that they take effect (``tests/test_pins.py``); the run
record (``sched.evidence.run_record``) says when a run had it.
"""

import os
import platform

#: The environment variable that turns the pins off (measurements only).
UNPINNED = "SCHED_UNPINNED"

#: Every pin on x86-64, as (variable, value).
X86_64 = (
    ("MKL_CBWR", "AVX2"),
    ("MKL_DYNAMIC", "FALSE"),
    ("ATEN_CPU_CAPABILITY", "avx2"),
    ("ONEDNN_MAX_CPU_ISA", "AVX2"),
    ("NUMBA_CPU_NAME", "x86-64-v3"),
    ("NUMBA_CPU_FEATURES", ""),
)
#: Every pin on aarch64 (no MKL; ATen and oneDNN take the machine's paths: see the docstring).
AARCH64 = (
    ("NUMBA_CPU_NAME", "generic"),
    ("NUMBA_CPU_FEATURES", ""),
)


def pins(machine=None):
    """The pins of a processor architecture (``platform.machine()`` by default): a tuple of
    (variable, value), empty for an architecture the project has no pins for."""
    machine = (machine or platform.machine()).lower()
    if machine in ("x86_64", "amd64"):
        return X86_64
    if machine in ("aarch64", "arm64"):
        return AARCH64
    return ()


def unpinned():
    """Whether the pins are turned off for this process (``SCHED_UNPINNED=1``)."""
    return os.environ.get(UNPINNED, "") not in ("", "0")


def pin(environ=None):
    """Set every pin in ``environ`` (``os.environ``), overriding what was there: a pin that a
    user's variable could change would make the result depend on the machine's setup. Returns
    the pins set (none with ``SCHED_UNPINNED=1``)."""
    environ = os.environ if environ is None else environ
    if unpinned():
        return ()
    chosen = pins()
    for name, value in chosen:
        environ[name] = value
    return chosen


def state():
    """What this process runs on, for the run record: the pins in force and each dispatcher's
    reading (the libraries already loaded only; nothing is imported here)."""
    import sys

    out = {"pinned": not unpinned(), "pins": {k: os.environ.get(k) for k, _ in pins()}}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        out["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        out["torch_threads"] = torch.get_num_threads()
    if "numba" in sys.modules:
        cfg = sys.modules["numba"].config
        out["numba_cpu_name"] = cfg.CPU_NAME
        out["numba_threads"] = sys.modules["numba"].get_num_threads()
    return out
