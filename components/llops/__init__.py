"""llops: how well attention feature maps approximate the polynomial kernel (specs/llops/)."""
