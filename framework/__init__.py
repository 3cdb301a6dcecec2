"""expspec framework: spec types, loader, schema, builder, runner, tracking, CLI.

Importing it pins the vector instructions of torch's own CPU kernels to AVX2 (`CPU_NUMERICS`: ATen's
vectorized kernels and oneDNN's), unless the environment already names them or
EXPSPEC_CPU_NUMERICS=native. A CPU run's numbers depend on them: AVX-512 kernels (softmax,
reductions, convolutions) add in another order than AVX2 ones, and a difference in the last bit
of a step becomes another curve after hundreds of steps. On 2026-12-02, on an AVX-512 machine, 13
of 23 papers' claim checks printed other numbers than their READMEs, which an AVX2 machine wrote
(causim's headline even turned from a deviation into a pass). MKL is left to choose its own code
path: its reproducibility mode (MKL_CBWR=AVX2) gave other numbers than the default path of either
machine (cvm_fairness's check failed with it and passed without). AVX2 is what x86-64 machines of
the last decade share, and the tiny CPU experiments of claims lose nothing by it. torch reads the
variables when it first computes, so setting them here is early enough for every `exp` command,
its forked or spawned trials (they inherit the environment) and code that imports framework. On
a GPU they only concern the few operations left on the CPU; on ARM they mean nothing.
"""

import os

CPU_NUMERICS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}

if os.environ.get("EXPSPEC_CPU_NUMERICS", "portable") != "native":
    for _name, _value in CPU_NUMERICS.items():
        os.environ.setdefault(_name, _value)
