"""Registry entries of the llops family (the kernel-approximation study of specs/llops/; its
feature maps and linear attention are shared sequence blocks, components/sequence/): data only,
importing this imports nothing."""

ENTRIES = {
    "data": {"query_key_pairs": "components.llops.kernels:QueryKeyPairs"},
    "tasks": {"kernel_approximation": "components.llops.kernels:KernelApproximation"},
}
