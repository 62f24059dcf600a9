"""The verdict: what ``rank()`` follows in a setting, chosen from the benchmark's tables alone.

In the order a verdict is reached (:func:`sched.verdict.outputs.write_outputs` runs it):

* ``summary``: the summary table (``resume.csv``) and the winner, from complete per-scenario
  tables, so a full run and the gathering of its shards give the same files;
* ``winner``: choosing the winner, chosen on the selection (validation) table and confirmed
  on the test table, and ``winner.json``'s keys;
* ``incumbent``: the incumbent (atc-tuned, else atc), which a verdict keeps unless a
  challenger shows evidence: the one :func:`~sched.verdict.incumbent.incumbent_of`;
* ``candidacy``: plan's candidacy, its settings' validation runs, the rule that picks one,
  and the gate by which plan on the winner becomes the verdict (every setting);
* ``periods``: a replayed period of real days as evidence (the studio's two gates share it);
* ``validation_days``: the studio's validation days weigh the winner (the studio setting);
* ``held_out``: the studio's held-out days confirm it (the studio setting);
* ``outputs``: the verdict's steps in order, and its files written as one set.

Terms: docs/architecture.md, "Glossary of the verdict".
"""
