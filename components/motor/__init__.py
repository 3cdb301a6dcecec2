"""The motor family (motor_adapters): differentiable arm plants in torch, recurrent controllers with a bank of residual adapters, and training by backpropagation through the plant."""
