"""expspec framework: spec types, loader, schema, builder, runner, tracking, CLI.

Importing it changes nothing in the process: pinning torch's CPU kernels to AVX2 is done by what
starts a process that computes (framework/invocation.py, `pin_cpu_numerics`).
"""
