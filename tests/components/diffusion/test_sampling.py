"""LoTTS sampling on diffusers models: tiny token UNet, toy-size SD2.1/SDXL/FLUX built from the
shipped configs, attention recording, confinement, NFE accounting, the missing-weights error.
Skipped only where diffusers/transformers are not installed (CI installs the extra)."""

import pytest
import torch

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

from components.diffusion.attention import AttentionStore  # noqa: E402
from components.diffusion.localize import QualityContrastLocalizer  # noqa: E402
from components.diffusion.pipelines import DiffusersPipeline, build_random  # noqa: E402
from components.local_assets import missing_message, resolve_local  # noqa: E402
from components.diffusion.sampling import BestOfN, LoTTS  # noqa: E402
from components.diffusion.tiny import TinyTokenUNet  # noqa: E402

PROMPTS = {"prompt": ["3", "7"]}


def mean_verifier(images, prompts):
    return images.float().flatten(1).mean(1)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return TinyTokenUNet(block_out_channels=[16, 32]).eval()


def test_attention_store_records_cross_and_self(tiny):
    store = AttentionStore()
    store.attach(tiny.unet)
    x = torch.randn(2, 1, 8, 8)
    with store.recording():
        tiny.denoise(x, 500, tiny.encode(["1", "2"], "low"))
    cross, self_maps = store.maps("cross"), store.maps("self")
    assert set(cross) == {64, 16} and cross[64].shape == (2, 64, 2)
    assert torch.allclose(cross[64].sum(-1), torch.ones(2, 64), atol=1e-5)
    assert self_maps[64].shape == (2, 64, 64)
    tiny.denoise(x, 500, tiny.encode(["1", "2"]))  # inactive: fused attention, nothing recorded
    assert store.active is False


def test_lotts_leaves_unmasked_region_unchanged_and_counts_nfe(tiny):
    torch.manual_seed(0)
    sampler = LoTTS(mean_verifier, QualityContrastLocalizer(mask_fraction=0.15), num_initial=2,
                    num_candidates=3, num_steps=6, strength=0.5)
    out = sampler(tiny, PROMPTS)
    assert float(out["outside_change"].max()) == 0.0
    assert out["nfe"].tolist() == [2 * 6 + 2 + 3 * 3] * 2
    assert out["masks"].shape == (2, 1, 8, 8) and float(out["masks"].mean()) == pytest.approx(10 / 64)
    assert bool((out["scores"] >= mean_verifier(out["initial_images"], ["3", "7"]) - 1e-6).all())


def test_harmonization_changes_the_unmasked_region(tiny):
    torch.manual_seed(0)
    sampler = LoTTS(mean_verifier, QualityContrastLocalizer(), num_initial=1, num_candidates=1, num_steps=4,
                    harmonize_steps=10, harmonize_strength=0.2)
    out = sampler(tiny, PROMPTS)
    assert float(out["outside_change"].max()) > 1e-3
    assert out["nfe"].tolist() == [4 + 2 + 2 + 2] * 2


def test_best_of_n_nfe_with_guidance(tiny):
    torch.manual_seed(0)
    out = BestOfN(mean_verifier, num_samples=3, num_steps=4, guidance_scale=2.0)(tiny, PROMPTS)
    assert out["nfe"].tolist() == [3 * 4 * 2] * 2 and out["images"].shape == (2, 1, 8, 8)


TE = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2, "projection_dim": 32}
VAE = {"block_out_channels": [16, 16], "down_block_types": ["DownEncoderBlock2D"] * 2,
       "up_block_types": ["UpDecoderBlock2D"] * 2, "norm_num_groups": 8, "layers_per_block": 1}
TOY = {
    "sdxl": {"unet": {"block_out_channels": [32, 64, 64], "attention_head_dim": [2, 4, 4], "layers_per_block": 1,
                      "transformer_layers_per_block": [1, 1, 1], "cross_attention_dim": 64, "norm_num_groups": 8,
                      "addition_time_embed_dim": 8, "projection_class_embeddings_input_dim": 80},
             "vae": VAE, "text_encoder": TE, "text_encoder_2": TE},
    "flux": {"transformer": {"attention_head_dim": 16, "num_attention_heads": 2, "num_layers": 1, "num_single_layers": 1,
                             "joint_attention_dim": 32, "pooled_projection_dim": 32, "axes_dims_rope": [4, 6, 6]},
             "vae": {**VAE, "latent_channels": 16}, "text_encoder": TE,
             "text_encoder_2": {"d_model": 32, "d_ff": 64, "d_kv": 8, "num_heads": 4, "num_layers": 1}},
}


def toy_pipeline(family):
    """The family's real classes and code paths at toy width (shipped configs, patched sizes)."""
    pipe = DiffusersPipeline.__new__(DiffusersPipeline)
    torch.nn.Module.__init__(pipe)
    pipe.family, pipe.model_id, pipe.dtype_, pipe.height, pipe.width = family, "toy", torch.float32, 32, 32
    pipe.suffix = {None: "", "high": ", high quality", "low": ", low quality, blurry"}
    pipe.negative_prompt, pipe.flux_guidance = "", 3.5
    pipe._init_parts(build_random(family, torch.float32, "cpu", TOY[family]))
    return pipe


@pytest.mark.parametrize("family", ["sdxl", "flux"])
def test_lotts_runs_on_toy_pipelines(family):
    torch.manual_seed(0)
    pipe = toy_pipeline(family)
    sampler = LoTTS(mean_verifier, QualityContrastLocalizer(propagation_weight=0.5, keep_largest=True), num_initial=1,
                    num_candidates=2, num_steps=4, guidance_scale=2.0, max_self_tokens=4096)
    out = sampler(pipe, {"prompt": ["a cat", "a dog"]})
    calls = 1 if family == "flux" else 2
    assert out["images"].shape == (2, 3, 32, 32)
    assert out["nfe"].tolist() == [4 * calls + 2 + 2 * 2 * calls] * 2
    assert float(out["outside_change"].max()) == 0.0
    weights = pipe.quality_key_weights(pipe.encode(["a cat"], "low"))
    assert int(weights.sum()) == 5  # the suffix ", low quality, blurry": 5 stand-in tokens


def test_missing_model_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError) as error:
        resolve_local("stabilityai/stable-diffusion-xl-base-1.0", "sdxl", None, None)
    assert "model 'stabilityai/stable-diffusion-xl-base-1.0' (sdxl) is not available locally" in str(error.value)
    assert "huggingface-cli download stabilityai/stable-diffusion-xl-base-1.0" in str(error.value)
    with pytest.raises(FileNotFoundError) as error:
        resolve_local("x/y", "flux", str(tmp_path), None)
    assert str(error.value) == missing_message("x/y", "flux", f"model.local_dir '{tmp_path}' has no model_index.json")
