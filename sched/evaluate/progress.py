"""A progress bar on standard error, or nothing."""

import sys


def bar(iterable, desc, progress, total=None):
    """``iterable`` wrapped in a tqdm bar when ``progress`` is true, else unchanged."""
    if not progress:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, file=sys.stderr, leave=False, dynamic_ncols=True)
