"""Build hook: ship `sched_first.pth` with every wheel, editable ones included.

Python's standard library has a module called `sched`, and the standard library
comes before site-packages on `sys.path`, so a plain install of this package
would be shadowed: `import sched` would give the stdlib module. The project's
contract names the package `sched`, so the .pth file installs a one-line import
hook that resolves the top-level name `sched` outside the standard library.
"""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        key = "force_include_editable" if version == "editable" else "force_include"
        build_data.setdefault(key, {})["sched_first.pth"] = "sched_first.pth"
