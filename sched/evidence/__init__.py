"""Evidence anyone can rerun and check (issue 45): a result depends on the commit, the config and
the input files only, and a manifest proves it.

Modules: ``determinism`` (the pinned code paths of MKL, ATen, oneDNN and numba, set before torch
or numba load: the same bytes on any x86-64 processor with AVX2), ``manifest``
(``results/manifest.sha256``: every result artefact's sha256 in DAG order, run records left out,
and the comparison of two), ``run_record`` (what a run ran on: versions, processor flags, pins,
host, commit; never hashed by a later step).

Kept light: ``sched/__init__.py`` imports ``determinism`` before anything else loads.
"""
