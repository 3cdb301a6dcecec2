"""Registry entries of the shared generative blocks (flow matching, conv VAE and its training task;
the masked discrete-diffusion LM objective): data only, importing this imports nothing."""

ENTRIES = {
    "models": {
        "velocity_mlp": "components.generative.flow_matching:VelocityMLP",
        "conv_vae": "components.generative.vae:ConvVAE",
    },
    "tasks": {
        "autoencoding": "components.generative.task:Autoencoding",
    },
}
