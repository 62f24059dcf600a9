"""Simulation: the dispatching rules, the compiled event loop, its plain-Python reference,
the one-queue path of rank(), and the clairvoyant local search."""
