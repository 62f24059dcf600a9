"""Optional extras: the package and its commands work without them."""

import subprocess
import sys

from .conftest import ROOT


# Run in a fresh interpreter: sys.modules[name] = None makes `import name` fail as if it were
# not installed, whether or not it is.
def without(blocked, modules, extra, commands=()):
    """A script that imports every module of sched with ``blocked`` missing, checks that each
    of ``modules`` names ``extra`` in its MissingExtraError, and that each of ``commands``
    (argument lists) exits 2; it prints ok."""
    return f"""
import importlib, pathlib, sys
for name in {tuple(blocked)!r}:
    sys.modules[name] = None
import sched, sched.cli
from sched.errors import MissingExtraError
root = pathlib.Path(sched.__file__).parent
for p in sorted(root.rglob("*.py")):
    name = ".".join(("sched",) + p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    if name in ("sched.__main__", *{tuple(modules)!r}):
        continue
    importlib.import_module(name)
for module in {tuple(modules)!r}:
    try:
        importlib.import_module(module)
    except MissingExtraError as exc:
        assert isinstance(exc, ImportError) and "render-queue-sched[{extra}]" in str(exc), exc
    else:
        raise SystemExit(f"{{module}} imported without {blocked[0]}")
for argv in {[list(c) for c in commands]!r}:
    assert sched.cli.main(argv) == 2, argv
try:
    sched.cli.main(["--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("ok")
"""


WITHOUT_GYMNASIUM = without(["gymnasium"], ["sched.learn.env.gym_env"], "gym")
WITHOUT_SERVING_EXTRAS = without(
    ["starlette", "uvicorn", "prometheus_client", "opencue", "opencue_proto", "grpc", "boto3", "botocore"],
    ["sched.serve.http", "sched.serve.connections", "sched.serve.metrics"],
    "serve",
    [
        ["serve"],
        ["opencue", "sync", "--show", "film"],
        ["deadline", "sync", "--farm-id", "f", "--queue-id", "q"],
    ],
)


def test_the_package_and_its_commands_work_without_gymnasium():
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_GYMNASIUM], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_the_package_works_without_the_serve_opencue_and_deadline_extras_and_their_commands_name_them():
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_SERVING_EXTRAS], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
    lines = out.stderr.strip().splitlines()
    assert lines[-3].startswith("sched serve: error: sched serve needs the optional extra serve")
    assert "pip install 'render-queue-sched[serve]'" in lines[-3]
    assert lines[-2].startswith("sched opencue: error: sched opencue needs the optional extra opencue")
    assert "pip install 'render-queue-sched[opencue]'" in lines[-2]
    assert lines[-1].startswith("sched deadline: error: sched deadline needs the optional extra deadline")
    assert "(boto3 is missing): pip install 'render-queue-sched[deadline]'" in lines[-1]
