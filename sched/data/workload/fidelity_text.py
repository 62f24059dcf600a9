"""The fidelity record's sentences (``sched fidelity`` prints them, the report's studio section
quotes them): whether the generator ranks the rules as the real days do, what it misses of them,
and the tau of the generator's other variants."""


def switches_text(record):
    """One line: the generator's switches on, and the tau of each variant checked beside it."""
    m = record.get("model")
    if not m:
        return ""
    rest = "; ".join(
        f"{v['variant']}: {v['tau']['scenarios']:.2f} (streams {v['tau']['streams']:.2f})"
        for v in m["variants"]
    )
    return (
        f"Generator switched on (config scenario.workload_model): {', '.join(m['on'])}; Kendall's tau on the "
        f"scenarios with the other variants: {rest or 'none checked'}."
    )


def misses_text(record):
    """One line: what the generated scenarios miss of the real days (``record["misses"]``)."""
    m = record.get("misses")
    if not m or not (m["levels"] or m["discordant"]):
        return ""
    parts = [f"{name} {r:.2f}x theirs" for name, r in m["levels"].items()]
    parts += [
        f"{d['rules'][0]} before {d['rules'][1]} (ratio to {record['reference']} "
        f"{d['real'][0]:.3f} and {d['real'][1]:.3f} on the real days, {d['generated'][0]:.3f} and "
        f"{d['generated'][1]:.3f} generated)"
        for d in m["discordant"]
    ]
    return f"What the generated {m['against']} miss of the real days: " + "; ".join(parts) + "."


def verdict_text(record):
    """One line: whether the generator ranks the rules as the real days do."""
    tau, th = record["tau"], record["threshold"]
    agree = not record["lean_on_days"]
    return (
        f"Kendall's tau between the rules' order on the {record['days']:g} validation days and on the "
        f"generated scenarios {tau['scenarios']:.2f} (streams with a warm-up day: {tau['streams']:.2f}); "
        + (
            f"at least {th:g}: the generator ranks the rules as the real days do."
            if agree
            else f"below {th:g}: the generator ranks the rules unlike the real days, by "
            f"{th - tau['scenarios']:.2f}; the studio's verdict leans on the validation days."
        )
    )
