"""Curve fits over sweep results (scaling laws)."""
