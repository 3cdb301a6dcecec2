"""Model merging through parameter symmetries (lmc_dual_merge): see registry.py."""
