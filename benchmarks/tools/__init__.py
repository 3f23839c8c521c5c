"""Per-tool evaluation scripts, each run as its own process by ``benchmarks/run.py``."""
