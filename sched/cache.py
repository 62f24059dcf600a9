"""A keyed cache that loads each value once, safe from threads: the one locked cache.

Policy files (``sched.learn.policy.policy_file.load_cached``), calibration files
(``sched.data.bench.calibration``), pools of sampled futures (``sched.learn.search.planner``)
and the planners of ``rank(policy="plan")`` (``sched.ranking.plan_rank``) are kept in one
each. Each caller chooses its key (a file's path, size, modification and change times and
inode; a config's hash)."""

import threading


class Cache:
    """Values by key, each loaded once: :meth:`get` returns the value it found or loaded, never a
    read of the cache after the fact; a load runs under the lock (checked again inside it), so
    threads asking for one key at once load it once. Before a new value is stored the cache is
    emptied when it holds ``max_entries`` (a few files or configs are in use at a time)."""

    def __init__(self, max_entries):
        self.max_entries = int(max_entries)
        self._values = {}
        self._lock = threading.Lock()

    def __contains__(self, key):
        return key in self._values

    def clear(self):
        with self._lock:
            self._values.clear()

    def get(self, key, load):
        """The value of ``key``, ``load()`` on a miss (an exception it raises stores nothing)."""
        hit = self._values.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._values.get(key)
            if hit is None:
                hit = load()
                if len(self._values) >= self.max_entries:
                    self._values.clear()
                self._values[key] = hit
        return hit
