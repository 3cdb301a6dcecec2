"""Verifiers: score generated images against their prompts, called as verifier(images, prompts)
-> scores (B,), higher is better. Images are (B, C, H, W) in [0, 1].

LoTTS (arXiv 2511.19917) selects among candidates with ImageReward or HPSv2 at paper scale. At
tiny scale, `tiny_digit_verifier` is a small learned scorer: P(prompted digit | image) minus
P(image has a defect), from an MLP trained at construction on scikit-learn's digits with
injected defects (about a second; deterministic in its seed).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from components.diffusion.tiny import inject_defects, parse_prompt
from components.types import NonNegativeFloat, PositiveInt

# Trained tiny verifier networks of this process, by (hidden, steps, noise, seed): training is
# deterministic in these (about 7 CPU-s on one thread), so the stages of one run share one.
_TRAINED: dict[tuple[int, int, float, int], nn.Module] = {}


class TinyDigitVerifier:
    """Learned tiny verifier: score = P(class = prompt | x) - defect_weight * P(defect | x).

    Args:
        hidden: MLP hidden width.
        steps: Full-batch Adam steps of its training.
        defect_weight: Weight of the defect probability in the score.
        noise: Std of the pixel noise of the augmented training copies.
        seed: Seed of its training (independent of the run's seed).
    """

    def __init__(self, hidden: PositiveInt = 128, steps: PositiveInt = 300, defect_weight: float = 1.0,
                 noise: NonNegativeFloat = 0.15, seed: int = 0) -> None:
        self.defect_weight = defect_weight
        key = (hidden, steps, float(noise), seed)
        if key not in _TRAINED:
            _TRAINED[key] = self._train(hidden, steps, noise, seed)
        self.net = _TRAINED[key]

    @staticmethod
    def _train(hidden: int, steps: int, noise: float, seed: int) -> nn.Module:
        from sklearn import datasets

        bunch = datasets.load_digits()
        clean = (np.asarray(bunch.images, dtype=np.float32) / 16.0)[:, None]
        defective, _ = inject_defects(clean, np.random.default_rng(seed + 7))
        # Noisy copies of both (pixel noise of std `noise`) teach the detector that diffuse noise,
        # which imperfect samples have everywhere, is not a defect; only the local patch is.
        rng = np.random.default_rng(seed + 11)
        noisy = [np.clip(a + rng.normal(0, noise, a.shape), 0, 1).astype(np.float32) for a in (clean, defective)]
        x = torch.as_tensor(np.concatenate([clean, defective, *noisy])).flatten(1)
        y = torch.as_tensor(np.tile(bunch.target, 4)).long()
        d = torch.cat([torch.zeros(len(clean)), torch.ones(len(clean))]).repeat(2)
        # Trained once per process and kept (_TRAINED): on one thread, so that the verifier is the
        # same whatever thread count the process had when it first built one (at 2 threads its
        # weights differ in the last bits, and lotts' scores by up to 0.1).
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return TinyDigitVerifier._fit(x, y, d, hidden, steps, seed)
        finally:
            torch.set_num_threads(threads)

    @staticmethod
    def _fit(x: torch.Tensor, y: torch.Tensor, d: torch.Tensor, hidden: int, steps: int, seed: int) -> nn.Module:
        with torch.random.fork_rng(), torch.inference_mode(False), torch.enable_grad():
            torch.manual_seed(seed)
            net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 11))
            opt = torch.optim.Adam(net.parameters(), lr=3e-3)
            for _ in range(steps):
                out = net(x)
                loss = nn.functional.cross_entropy(out[:, :10], y) + nn.functional.binary_cross_entropy_with_logits(out[:, 10], d)
                opt.zero_grad()
                loss.backward()
                opt.step()
        return net.eval().requires_grad_(False)

    def parts(self, images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(P(prompted class), P(defect)) per image."""
        out = self.net(images.detach().float().cpu().flatten(1))
        classes = torch.tensor([parse_prompt(p) for p in prompts])
        return out[:, :10].softmax(1)[torch.arange(len(out)), classes], out[:, 10].sigmoid()

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        p_class, p_defect = self.parts(images, prompts)
        return p_class - self.defect_weight * p_defect


def _missing(package: str, install: str) -> ImportError:
    return ImportError(f"verifier needs the '{package}' package, which is not installed: {install}")


class ImageRewardVerifier:
    """ImageReward (Xu et al. 2023) human-preference reward, as in the LoTTS paper.

    Args:
        checkpoint: Local path of ImageReward.pt (or a folder holding it with med_config.json);
            null: $IMAGEREWARD_HOME, else ~/.cache/ImageReward. Never downloaded at run time.
        device: Where the reward model runs ("cuda", "cpu"; null: cuda when available).
    """

    def __init__(self, checkpoint: str | None = None, device: str | None = None) -> None:
        if importlib.util.find_spec("ImageReward") is None:
            raise _missing("image-reward", "pip install image-reward")
        folder = Path(checkpoint or os.environ.get("IMAGEREWARD_HOME", Path.home() / ".cache" / "ImageReward"))
        path = folder if folder.is_file() else folder / "ImageReward.pt"
        if not path.is_file():
            raise FileNotFoundError(
                f"ImageReward weights not found at {path}; download 'THUDM/ImageReward' (ImageReward.pt, "
                f"med_config.json) on a machine with network into that folder, or set checkpoint: / $IMAGEREWARD_HOME")
        import ImageReward

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = ImageReward.load(str(path), device=self.device, med_config=str(path.parent / "med_config.json"))

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        from PIL import Image

        scores = []
        for image, prompt in zip(images, prompts):
            array = (image.detach().float().clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255).astype(np.uint8)
            scores.append(float(self.model.score(prompt, [Image.fromarray(array.squeeze())])))
        return torch.tensor(scores)


class HPSv2Verifier:
    """HPSv2 (Wu et al. 2023) human-preference score, as in the LoTTS paper.

    Args:
        version: HPS checkpoint version ("v2.0" or "v2.1").
        checkpoint: Local path of the HPS checkpoint (null: $HPS_ROOT, else ~/.cache/hpsv2).
    """

    def __init__(self, version: str = "v2.1", checkpoint: str | None = None) -> None:
        if importlib.util.find_spec("hpsv2") is None:
            raise _missing("hpsv2", "pip install hpsv2")
        name = {"v2.0": "HPS_v2_compressed.pt", "v2.1": "HPS_v2.1_compressed.pt"}.get(version)
        if name is None:
            raise ValueError(f"version must be 'v2.0' or 'v2.1', got '{version}'")
        root = Path(os.environ.get("HPS_ROOT", Path.home() / ".cache" / "hpsv2"))
        path = Path(checkpoint) if checkpoint else root / name
        if not path.is_file():
            raise FileNotFoundError(
                f"HPSv2 weights not found at {path}; download 'xswu/HPSv2' ({name}) and the OpenCLIP "
                f"ViT-H-14 weights on a machine with network, or set checkpoint: / $HPS_ROOT")
        self.version, self.path = version, path

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        import hpsv2
        from PIL import Image

        scores = []
        for image, prompt in zip(images, prompts):
            array = (image.detach().float().clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255).astype(np.uint8)
            scores.append(float(hpsv2.score([Image.fromarray(array.squeeze())], prompt, hps_version=self.version)[0]))
        return torch.tensor(scores)


class PixelContrast:
    """Placeholder verifier: the standard deviation of pixel intensities. It measures nothing
    about quality; it exists so that a sampling loop can run end to end where no real verifier
    applies (random-weight timing runs, `sdxl_random_init.yaml`)."""

    def __call__(self, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        return images.detach().float().flatten(1).std(1).cpu()
