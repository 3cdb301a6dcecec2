"""The causal family: executable causal simulators (random SCMs) and the query data built on them (causim)."""
