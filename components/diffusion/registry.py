"""Registry entries of the diffusion family (lotts): data only, importing this imports nothing."""

KINDS = {
    "samplers": {
        "noun": "sampler",
        "contract": (
            "Nested in a sampling task's `sampler:`: called as sampler(model, batch) -> outputs dict ('images' "
            "(B, C, H, W) in [0, 1], 'scores', 'nfe', 'masks', ...); contract in components/diffusion/sampling.py."),
    },
    "verifiers": {
        "noun": "verifier",
        "contract": "Nested in a sampler's `verifier:`: called as verifier(images, prompts) -> (B,) scores, higher better.",
    },
    "localizers": {
        "noun": "localizer",
        "contract": "Nested in a sampler's `localizer:`: turns recorded attention maps into a (B, 1, h, w) defect mask.",
    },
}

ENTRIES = {
    "models": {
        "tiny_token_unet": "components.diffusion.tiny:TinyTokenUNet",
        "diffusers_pipeline": "components.diffusion.pipelines:DiffusersPipeline",
    },
    "data": {
        "digit_defects": "components.diffusion.digit_defects:DigitDefects",
        "prompt_set": "components.diffusion.prompts:PromptSet",
    },
    "metrics": {
        "nfe": "components.diffusion.metrics:NFE",
        "verifier_score": "components.diffusion.metrics:VerifierScore",
        "initial_verifier_score": "components.diffusion.metrics:InitialVerifierScore",
        "outside_mask_change": "components.diffusion.metrics:OutsideMaskChange",
        "mask_iou": "components.diffusion.metrics:MaskIoU",
        "random_mask_iou": "components.diffusion.metrics:RandomMaskIoU",
    },
    "tasks": {
        "diffusion_training": "components.diffusion.task:DiffusionTraining",
        "sampling": "components.diffusion.task:Sampling",
    },
    "samplers": {
        "best_of_n": "components.diffusion.sampling:BestOfN",
        "lotts": "components.diffusion.sampling:LoTTS",
        "localization_probe": "components.diffusion.sampling:LocalizationProbe",
    },
    "verifiers": {
        "tiny_digit_verifier": "components.diffusion.verifiers:TinyDigitVerifier",
        "image_reward": "components.diffusion.verifiers:ImageRewardVerifier",
        "hpsv2": "components.diffusion.verifiers:HPSv2Verifier",
        "pixel_contrast": "components.diffusion.verifiers:PixelContrast",
    },
    "localizers": {"quality_contrast": "components.diffusion.localize:QualityContrastLocalizer"},
    "claim_functions": {"min_margin": "components.diffusion.claims:min_margin"},
}
