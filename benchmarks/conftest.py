"""Print compiled / reference speed ratios after the pytest-benchmark table."""
from collections import defaultdict


def pytest_terminal_summary(terminalreporter, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
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
