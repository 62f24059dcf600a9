"""The README's two set-up commands are the ones CI and users run, and its links and the docs' resolve."""

import re

from .conftest import ROOT


def _commands():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set up and run") :]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_main_and_test_commands_with_venv_install():
    main, tests = _commands()[:2]
    for cmd in (main, tests):
        assert cmd.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert "pytest" in tests and "pytest" not in main


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text()
    assert _commands()[1] in ci


def _anchors(text):
    """GitHub's heading anchors of a Markdown text (headings inside code fences left out)."""
    anchors, seen = set(), {}
    for line in re.sub(r"^```.*?^```", "", text, flags=re.M | re.S).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_relative_links_of_readme_and_docs_point_to_existing_files_and_headings():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) >= 8, pages
    broken = []
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and anchor not in _anchors(dest.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def _layout():
    """The layout table: docs/architecture.md's "Layout" (the README points there)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Layout") :]
    return section[: section.index("\n\n", section.index("| path |"))]


def test_the_layout_table_names_existing_paths_and_every_module_and_script():
    table = _layout()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = [p for row in rows for p in re.findall(r"`([^`]+)`", row.split(" | ")[0])]
    assert [p for p in named if not (ROOT / p.rstrip("/")).exists()] == []
    expected = [
        f"sched/{p.name}/" for p in sorted((ROOT / "sched").iterdir()) if (p / "__init__.py").exists()
    ]
    expected += [
        f"sched/{p.name}" for p in sorted((ROOT / "sched").glob("*.py")) if not p.name.startswith("__")
    ]
    expected += [p.name for p in sorted((ROOT / "benchmarks").glob("*.py")) if p.stem != "conftest"]
    expected = [e for e in expected if not e.startswith("test_")]  # pytest-benchmark files: a group
    assert [e for e in expected if e not in table] == []
