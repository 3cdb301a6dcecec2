"""Model compression (scalebits): mixed-precision post-training quantization over hardware-aligned
tiles; the quantizer itself is the shared `components.models.precision.quantize_uniform`."""
