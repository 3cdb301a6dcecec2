"""Optimization problems (games) that algorithm-study tasks run on; no data, exact metrics."""
