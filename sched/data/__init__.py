"""Data: scenarios (generate, read, validate, write), duration distributions, and the
calibration from GPU bench logs (the fit, and the calibration file it writes)."""
