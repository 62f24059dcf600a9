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
    _print_speeds(terminalreporter, groups)
    _print_paired(terminalreporter, session)


def _print_paired(terminalreporter, session):
    """The paired ratios some benchmarks record (test_sim_speed: mixed GPU speeds)."""
    for bench in session.benchmarks:
        info = bench.extra_info or {}
        if "mixed_over_identical" not in info:
            continue
        terminalreporter.write_sep("-", "paired rounds (median ratio of decisions/s [bootstrap 95 % CI])")
        (m, ci), (c, cc) = info["mixed_over_identical"], info["core_over_reference_mixed"]
        n1, n2 = info["rounds"]
        terminalreporter.write_line(
            f"    core, one thread: mixed / identical GPUs {m:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] ({n1} pairs)"
        )
        terminalreporter.write_line(
            f"    mixed GPUs: core (one thread) / reference {c:.0f}x [{cc[0]:.0f}, {cc[1]:.0f}] ({n2} pairs)"
        )


def _print_speeds(terminalreporter, groups):
    """Decisions per second on mixed GPUs against identical ones (test_sim_speed's farm groups)."""
    mixed = [g for g in groups if g.startswith("atc, 4 GPUs ") and "identical" not in g]
    same = [g for g in groups if g.startswith("atc, 4 GPUs identical")]
    if not (mixed and same):
        return
    terminalreporter.write_sep("-", "mixed GPU speeds vs identical GPUs (decisions/s, medians)")
    a, b = groups[mixed[0]], groups[same[0]]
    for impl in sorted(set(a) & set(b)):
        ra = a[impl].extra_info["decisions"] / a[impl].stats.median
        rb = b[impl].extra_info["decisions"] / b[impl].stats.median
        terminalreporter.write_line(
            f"    {impl}: mixed {ra:,.0f} /s, identical {rb:,.0f} /s, mixed / identical {ra / rb:.3f}"
        )


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
