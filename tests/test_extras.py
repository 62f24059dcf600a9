"""Optional extras: the package and its commands work without them."""

import subprocess
import sys

from .conftest import ROOT

# Run in a fresh interpreter: sys.modules["gymnasium"] = None makes `import gymnasium` fail
# as if it were not installed, whether or not it is.
WITHOUT_GYMNASIUM = """
import importlib, pathlib, sys
sys.modules["gymnasium"] = None
import sched, sched.cli
from sched.errors import MissingExtraError
root = pathlib.Path(sched.__file__).parent
for p in sorted(root.rglob("*.py")):
    name = ".".join(("sched",) + p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    if name in ("sched.__main__", "sched.learn.gym_env"):
        continue
    importlib.import_module(name)
try:
    import sched.learn.gym_env
except MissingExtraError as exc:
    assert isinstance(exc, ImportError) and "render-queue-sched[gym]" in str(exc), exc
else:
    raise SystemExit("sched.learn.gym_env imported without gymnasium")
try:
    sched.cli.main(["--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("ok")
"""


def test_the_package_and_its_commands_work_without_gymnasium():
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_GYMNASIUM], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


WITHOUT_SERVING_EXTRAS = """
import importlib, pathlib, sys
for name in ("starlette", "uvicorn", "prometheus_client", "opencue", "opencue_proto", "grpc"):
    sys.modules[name] = None
import sched, sched.cli
from sched.errors import MissingExtraError
root = pathlib.Path(sched.__file__).parent
for p in sorted(root.rglob("*.py")):
    name = ".".join(("sched",) + p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    if name in ("sched.__main__", "sched.serve.http"):
        continue
    importlib.import_module(name)
try:
    import sched.serve.http
except MissingExtraError as exc:
    assert isinstance(exc, ImportError) and "render-queue-sched[serve]" in str(exc), exc
else:
    raise SystemExit("sched.serve.http imported without starlette")
assert sched.cli.main(["serve"]) == 2
assert sched.cli.main(["opencue", "sync", "--show", "film"]) == 2
print("ok")
"""


def test_the_package_works_without_the_serve_and_opencue_extras_and_their_commands_name_them():
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_SERVING_EXTRAS], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
    lines = out.stderr.strip().splitlines()
    assert lines[-2].startswith("sched serve: error: sched serve needs the optional extra serve")
    assert "pip install 'render-queue-sched[serve]'" in lines[-2]
    assert lines[-1].startswith("sched opencue: error: sched opencue needs the optional extra opencue")
    assert "pip install 'render-queue-sched[opencue]'" in lines[-1]
