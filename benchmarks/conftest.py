"""Print compiled / reference speed ratios, and medians against declared targets,
after the pytest-benchmark table."""

from collections import defaultdict


def pytest_terminal_summary(terminalreporter, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    _print_targets(terminalreporter, session)
    groups = defaultdict(dict)
    for bench in session.benchmarks:
        impl = (bench.params or {}).get("impl")
        if impl and bench.stats is not None:
            groups[bench.group][impl] = bench
    lines = []
    for group, impls in sorted(groups.items()):
        ref = impls.get("reference")
        if ref is None:
            continue
        decisions = ref.extra_info.get("decisions", 0)
        lines.append(f"{group}: reference {decisions / ref.stats.median:,.0f} decisions/s")
        for impl, bench in sorted(impls.items()):
            if impl != "reference":
                lines.append(
                    f"    {impl}: {decisions / bench.stats.median:,.0f} decisions/s, "
                    f"{ref.stats.median / bench.stats.median:,.0f}x the reference (medians)"
                )
    if lines:
        terminalreporter.write_sep("-", "compiled core vs Python reference")
        for line in lines:
            terminalreporter.write_line(line)


def _print_targets(terminalreporter, session):
    """Medians against the targets some benchmarks declare (extra_info target_p50_s)."""
    lines = []
    for bench in session.benchmarks:
        target = (bench.extra_info or {}).get("target_p50_s")
        if target and bench.stats is not None:
            med = bench.stats.median
            lines.append(
                f"{bench.name}: median {med * 1e3:.3f} ms, target {target * 1e3:g} ms: "
                f"{'met' if med <= target else 'MISSED'}"
            )
    if lines:
        terminalreporter.write_sep("-", "targets (medians)")
        for line in lines:
            terminalreporter.write_line(line)
