"""The chunked farm settings (config ``farm.settings``; issue 59, points 3 to 7).

``bench`` runs a chunked setting's benchmark (``sched farm-bench``): ATC's k tuned at frame level,
the shipped rule chosen on validation seeds, and on the test seeds every rule, the farm's own
dispatchers, the same jobs run whole and the shipped rule at the adapters' sync intervals, with
paired intervals. ``headroom`` adds the clairvoyant reference on the first test seeds
(``clairvoyant.csv``, its rows of ``farm.csv``); ``plan_candidacy``, plan's candidacy on the
validation seeds (``plan_candidacy.json``, the longer run). ``caps`` tunes the parallelism limit
(the most chunks a job runs at once under tuned ATC, :mod:`sched.sim.farm_limits`) on the validation
seeds. ``learned`` judges a learned farm policy (``sched farm-learned``) beside the benchmark: its
candidacy on the selection seeds and its rows at each sync interval. ``report`` renders their rows
of ``rapport.md`` (under the first table, and the section "Chunked farm settings") from those files;
``learned_report`` the learned policy's lines there and its learning curve (the longer run).
"""
