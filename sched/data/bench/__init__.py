"""Task durations calibrated from GPU bench logs (``sched calibrate``, docs/calibration.md).

* ``bench_logs``: reading the bench logs, one record per measured render (CSV or JSON Lines);
* ``fit``: the duration fits and :func:`~sched.data.bench.fit.calibrate`;
* ``gpu_effect``: the duration model's speed factor per GPU model;
* ``calibration``: reading a calibration file (the fit's output) and using it;
* ``calibration_output``: what ``sched calibrate`` hands back (figure, files, terminal lines).
"""
