"""Serving: ``rank(tasks)``, the entry point a render queue calls, and its input parsing."""
