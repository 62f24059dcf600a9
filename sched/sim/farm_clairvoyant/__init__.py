"""The clairvoyant reference on the chunked farm (issue 59, point 5): the best job priority list
a local search finds knowing the future.

* ``decoder``: a job priority list dispatched as the chunked loop dispatches a rule, compiled,
  with saved states to resume from and compare with;
* ``search``: the descent over the list, and its entry points from Python.
"""
