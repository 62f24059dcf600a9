"""The package's shape: layers, no import cycles, modules and functions of a readable size.

Imports are read from the source (ast), including those inside functions: an
import deferred into a function still ties two modules together.
"""

import ast
from collections import defaultdict

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "sched"
#: No module or function is longer: a longer one is split by concept (issue 61), never excused.
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
SUBPACKAGES = (
    "sim",
    "sim/farm_clairvoyant",
    "data",
    "data/bench",
    "data/workload",
    "learn",
    "learn/policy",
    "learn/env",
    "learn/ppo",
    "learn/search",
    "learn/farm",
    "evaluate",
    "evaluate/farm",
    "verdict",
    "report",
    "pipeline",
    "ranking",
    "ranking/farm",
    "serve",
    "farms",
    "commands",
    "evidence",
    "formats",
)
#: No folder holds more than this many modules (``commands/``, one module a subcommand, aside).
MAX_FOLDER_MODULES = 12


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(path, known):
    """The project modules ``path`` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(), str(path))
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            # the longest known module the name refers to (a module, or a name in it)
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != this:
                out.add(name)
    return out


@pytest.fixture(scope="module")
def graph():
    known = sources()
    return {name: imported_modules(path, known) for name, path in known.items()}


def test_no_import_cycles(graph):
    # Package __init__ modules are left out as targets: importing sched.sim.core
    # runs sched/__init__.py first whatever the code says, and an __init__ that
    # imports nothing of its own cannot close a cycle.
    edges = {m: {d for d in deps if not sources()[d].name == "__init__.py"} for m, deps in graph.items()}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == "open":
                cycles.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_library_never_imports_the_command_line(graph):
    offenders = {
        m: sorted(d for d in deps if d == "sched.cli" or d.startswith("sched.commands"))
        for m, deps in graph.items()
        if not (m in ("sched.cli", "sched.__main__") or m.startswith("sched.commands"))
    }
    assert not {m: d for m, d in offenders.items() if d}


def test_ppo_imports_nothing_of_the_search(graph):
    """PPO's loop takes its warm start as a callable (sched.learn.chain composes the two), so one
    PPO update reads from sched/learn/ppo/ alone (issue 48)."""
    bad = {
        m: sorted(d for d in deps if d.startswith("sched.learn.search"))
        for m, deps in graph.items()
        if m.startswith("sched.learn.ppo")
    }
    assert not {m: d for m, d in bad.items() if d}


def test_simulation_does_not_depend_on_learning_evaluation_or_serving(graph):
    upper = (
        "sched.learn",
        "sched.evaluate",
        "sched.verdict",
        "sched.report",
        "sched.ranking",
        "sched.serve",
        "sched.farms",
        "sched.commands",
        "sched.cli",
    )
    bad = {
        m: sorted(d for d in deps if d.startswith(upper))
        for m, deps in graph.items()
        if m.startswith(("sched.sim", "sched.data"))
    }
    assert not {m: d for m, d in bad.items() if d}


def test_the_subpackages_exist_with_a_docstring():
    for name in SUBPACKAGES:
        init = PACKAGE / name / "__init__.py"
        assert init.exists(), name
        assert ast.get_docstring(ast.parse(init.read_text())), f"sched/{name}/__init__.py has no docstring"


def _folders():
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def _modules_of(folder):
    return sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__"))


def test_the_package_is_exactly_the_listed_folders():
    found = sorted(str(f.relative_to(PACKAGE)) for f in _folders() if f != PACKAGE)
    assert found == sorted(SUBPACKAGES)


def test_no_folder_holds_more_than_twelve_modules():
    big = {
        str(f.relative_to(ROOT)): len(_modules_of(f))
        for f in _folders()
        if f.name != "commands" and len(_modules_of(f)) > MAX_FOLDER_MODULES
    }
    assert not big, f"folders of more than {MAX_FOLDER_MODULES} modules: {big}"


def test_each_package_docstring_names_every_module_and_subpackage_in_it():
    missing = {}
    for folder in _folders():
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        parts = _modules_of(folder) + sorted(d.name for d in folder.iterdir() if (d / "__init__.py").exists())
        absent = [m for m in parts if f"``{m}``" not in doc and f".{m}`" not in doc]
        if absent:
            missing[str(folder.relative_to(ROOT))] = absent
    assert not missing, f"package docstrings that do not name these modules: {missing}"


def test_the_layout_table_names_every_folder():
    text = (ROOT / "docs" / "architecture.md").read_text()
    layout = text[text.index("## Layout") :]
    absent = [f"sched/{name}/" for name in SUBPACKAGES if f"`sched/{name}/`" not in layout]
    assert not absent, f"docs/architecture.md's Layout table lacks rows for {absent}"
    assert "docs/architecture.md#layout" in (ROOT / "README.md").read_text()


def test_modules_are_short():
    long = {name: path.read_text().count("\n") for name, path in sources().items()}
    long = {name: n for name, n in long.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {long}"


def test_functions_are_short():
    long = defaultdict(list)
    for name, path in sources().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[name].append(f"{node.name} ({n})")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {dict(long)}"


def test_no_module_excuses_its_size():
    """The `# size: <reason>` escape is gone (issue 61): a comment that excuses nothing is stale."""
    excused = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if line.lstrip().startswith("# size:")
    ]
    assert not excused, f"drop these `# size:` comments and split what they excuse: {excused}"


def test_no_top_level_module_shadows_the_standard_library():
    # `sched/io.py` once did: a script run from inside sched/ imported it as `io`
    import sys

    clashes = sorted(
        p.stem
        for p in PACKAGE.glob("*.py")
        if p.stem in sys.stdlib_module_names and p.stem not in ("__init__", "__main__")
    )
    assert not clashes, clashes


def test_results_paths_have_one_home():
    # every "results/..." path literal lives in sched/layout.py
    offenders = []
    for p in list(PACKAGE.rglob("*.py")) + list((ROOT / "workflow").rglob("*.smk")) + [ROOT / "Snakefile"]:
        if p.name == "layout.py":
            continue
        for i, line in enumerate(p.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if '"results/' in code or "'results/" in code:
                offenders.append(f"{p.relative_to(ROOT)}:{i}")
    assert not offenders, offenders


#: Builtin exceptions the library never raises itself: it raises a ``sched.errors.SchedError``
#: subclass instead (a ``ValueError``, so callers catching ``ValueError`` still work). Their builtin
#: subclasses (FileNotFoundError, UnicodeError, NotImplementedError, ...) count too.
BANNED_RAISES = ("ValueError", "RuntimeError", "TypeError", "KeyError", "IndexError", "OSError")
#: Files that still raise a builtin exception: none.
RAISES_ALLOWED = set()


def _banned_names():
    import builtins

    roots = tuple(getattr(builtins, n) for n in BANNED_RAISES)
    names = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, roots)}
    return names | {"Exception"}


def builtin_raises(path):
    """``line: name`` of each ``raise`` of a builtin exception class in ``path``."""
    banned = _banned_names()
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in banned:
                out.append(f"{node.lineno}: {exc.id}")
    return out


def test_every_library_raise_is_a_sched_error():
    found = {str(p.relative_to(ROOT)): builtin_raises(p) for p in sorted(PACKAGE.rglob("*.py"))}
    offenders = {f: r for f, r in found.items() if r and f not in RAISES_ALLOWED}
    assert not offenders, f"raise a sched.errors.SchedError subclass instead: {offenders}"
    stale = sorted(f for f in RAISES_ALLOWED if not found.get(f))
    assert not stale, f"no builtin raise left: drop from RAISES_ALLOWED: {stale}"


#: The most parameters a compiled function takes: settings, state arrays and outputs that
#: travel together are NamedTuples (``kernel.Net``, ``lookahead.Lookahead``, ``plan.Gate``...).
MAX_COMPILED_PARAMS = 8


def _compiled(node):
    """Whether a function definition is compiled by numba: decorated with ``njit``, ``jit``,
    ``register_jitable`` or a name made of them (``core_jit``), called or not."""
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if "jit" in name:
            return True
    return False


def test_no_compiled_function_takes_more_than_eight_parameters():
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _compiled(node):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                n += (a.vararg is not None) + (a.kwarg is not None)
                if n > MAX_COMPILED_PARAMS:
                    over.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n})")
    assert not over, f"bundle the parameters into NamedTuples: {over}"


#: The workflow's shared file only binds the package's plan (sched/pipeline/) to the rules.
MAX_COMMON_SMK_LINES = 150


def test_the_workflow_is_thin_its_logic_in_the_package():
    """common.smk binds sched/pipeline/ (tested without Snakemake) and stays short; a rule's input
    and params are named functions of the package, never a lambda (issue 61)."""
    rules = ROOT / "workflow" / "rules"
    common = (rules / "common.smk").read_text()
    assert common.count("\n") <= MAX_COMMON_SMK_LINES, common.count("\n")
    lambdas = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in [*sorted(rules.glob("*.smk")), ROOT / "Snakefile"]
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "lambda" in line.split("#", 1)[0]
    ]
    assert not lambdas, f"a lambda in a rule: name a function in sched/pipeline/wildcards.py: {lambdas}"
    # the studio's rules in a file of their own (sched/pipeline/studio.py: the setting)
    assert (rules / "studio.smk").exists() and "STUDIO" not in (rules / "robustness.smk").read_text()


#: The floors, lowest first (docs/architecture.md): a module imports from its own floor and the
#: ones below, never from above. A module's floor is that of the longest prefix listed here;
#: ``sched`` itself (the package's ``__init__``: ``from sched import rank``) and the command line
#: are the top. ``sched.setting`` (a benchmark's farm and load, read from a machines value and a
#: workload file) stands on data's floor.
FLOORS = (
    ("sched.cache", "sched.config", "sched.config_checks", "sched.errors", "sched.files", "sched.layout",
     "sched.limits", "sched.threads", "sched.formats", "sched.evidence"),
    ("sched.data", "sched.setting"),
    ("sched.sim", "sched.sim_numba"),
    ("sched.learn",),
    ("sched.evaluate", "sched.verdict", "sched.report", "sched.ranking"),
    ("sched.serve", "sched.farms", "sched.pipeline"),
    ("sched.commands", "sched.cli", "sched.__main__", "sched"),
)  # fmt: skip


def floor_of(module):
    """The floor of ``module`` (an index into FLOORS), by the longest listed prefix."""
    best = None
    for i, names in enumerate(FLOORS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[1]):
                best = (i, len(name))
    assert best is not None, f"{module}: on no floor: add it to FLOORS"
    return best[0]


def test_every_module_is_on_a_floor():
    for name in sources():
        floor_of(name)


def test_no_arrow_up(graph):
    """No module imports one on a floor above its own (a package's ``__init__`` as a target aside:
    importing ``sched.data.scenario`` runs ``sched/__init__.py`` whatever the code says)."""
    inits = {m for m, p in sources().items() if p.name == "__init__.py"}
    up = {
        m: sorted(d for d in deps if d not in inits and floor_of(d) > floor_of(m))
        for m, deps in graph.items()
    }
    assert not {m: d for m, d in up.items() if d}, {m: d for m, d in up.items() if d}
