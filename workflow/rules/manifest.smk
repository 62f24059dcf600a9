# The manifest: one sha256 line per result artefact under results/, run records excluded
# (sched/evidence/manifest.py), written once every result is, before the report that prints its digest.
# Two runs of one commit and config, on any machine, -j or executor, give the same file
# (docs/workflow.md, "Reproducible to the bit").


rule manifest:
    """Hash every result artefact in DAG order into results/manifest.sha256 (the action `write`),
    and write the run's record (versions, processor, pins, host) to results/logs/run.json.
    Runs `sched manifest` (sched/commands/manifest.py -> sched.evidence.manifest.manifest_text,
    sched.evidence.run_record.write)."""
    input:
        manifest_inputs,
    output:
        manifest=layout.MANIFEST,
        record=layout.RUN_RECORD,
    params:
        results=wc.output_dir,   # results/
    log:
        layout.log("manifest"),
    localrule: True   # reads the whole results folder where it lies
    shell:
        "python -m sched manifest write --results {params.results:q} --out {output.manifest:q}"
        " --record {output.record:q} > {log:q} 2>&1"
