"""A run record: what a run ran on, written apart from its results (issue 45).

The versions of every installed distribution, the Python, the processor (model and the
instruction-set flags that decide a library's code path), the pins in force
(``sched.evidence.determinism``), the usable CPUs and the host. Nothing here is hashed by a later step
or listed in the manifest: two runs that agree on their results may differ in all of it.
"""

import datetime
import os
import platform
import sys

#: The processor flags that pick a code path (MKL, ATen, oneDNN, numba), as /proc/cpuinfo names them.
PATH_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "amx_tile")


def processor():
    """{"model", "vendor", "machine", "flags"}: what /proc/cpuinfo says of the first CPU (Linux),
    the path flags only; the model and vendor Python knows elsewhere."""
    found = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = (x.strip() for x in line.partition(":"))
                if key in ("model name", "vendor_id", "flags", "Features"):
                    found.setdefault(key, value)
    except OSError:
        pass
    have = set((found.get("flags") or found.get("Features") or "").split())
    return {
        "model": found.get("model name") or platform.processor() or None,
        "vendor": found.get("vendor_id"),
        "machine": platform.machine(),
        "flags": [f for f in PATH_FLAGS if f in have] or sorted(have)[:40],
    }


def commit():
    """{"commit", "dirty"} of the checkout the package runs from (None outside a git checkout)."""
    import subprocess

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        status = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def versions():
    """{distribution: version} of every installed distribution, sorted by name."""
    from importlib import metadata

    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower()] = dist.version
    return dict(sorted(out.items()))


def record(**extra):
    """The run record of this process, with ``extra`` fields (the step, its wall time...)."""
    from sched import threads
    from sched.evidence import determinism

    return {
        "written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        **commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": processor(),
        "usable_cpus": threads.usable_cpus(),
        "determinism": determinism.state(),
        **extra,
        "versions": versions(),
    }


def write(path, **extra):
    """Write the run record to ``path`` atomically."""
    from sched import files

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    files.write_json(path, record(**extra))
