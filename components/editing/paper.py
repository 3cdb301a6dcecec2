"""Paper-scale pieces of minchange_edit: an instruction-based diffusion editor and an agentic VLM
judge, both from local weights only, and the data and task that evaluate an editor with the judge.

- `instruct_pix2pix_editor`: diffusers' StableDiffusionInstructPix2PixPipeline (InstructPix2Pix,
  Brooks et al. 2023, `timbrooks/instruct-pix2pix`), found through the diffusion package's loading
  code (`components.local_assets.resolve_local`: the local Hugging Face cache or a local
  folder, offline; a missing model is a FileNotFoundError at build time saying how to provide it).
- `agentic_vlm_judge`: a vision-language model (Qwen2.5-VL class, `transformers`' Qwen2.5-VL
  classes) asked to reason step by step about the two failure modes the paper names, changes the
  instruction asked for that are missing (unimplemented) and changes it did not ask for
  (unintended), and to end with `IMPLEMENTED: a/10` and `UNINTENDED: b/10`; `parse_verdict` reads
  them as scores in [0, 1]. The judge has the tiny oracle's interface (components/editing/oracle.py):
  {"implemented", "unintended"} per edit, which the rewards of components/editing/rewards.py combine.
- `edit_instructions`: a local JSON-lines file of {"image": path, "instruction": text} records (a
  MagicBrush / Emu-Edit style benchmark exported to files), images resized to `size`.
- `edit_evaluation`: runs the editor on each batch and logs the judge's `test/implemented`,
  `test/unintended` and the reward's `test/reward` (phases: [test]).

Not built here: the paper's RL fine-tuning of the diffusion editor against this reward
(DDPO / Flow-GRPO style); the tiny scale trains its latent editor with `latent_edit_rl`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from components.data.base import local_path
from framework.extras import require
from components.local_assets import DTYPES, offline, resolve_local
from components.kinds import Kind
from components.types import PositiveFloat, PositiveInt

Reward = Annotated[Any, Kind("edit_rewards")]
Judge = Annotated[Any, Kind("edit_judges")]

PROMPT = (
    "The first image is the original and the second is the result of the edit instruction: \"{instruction}\".\n"
    "Reason step by step. First list the changes the instruction asks for and say, for each, whether it is "
    "visible in the second image (unimplemented changes). Then list every other difference between the two "
    "images: objects, colours, positions, sizes, background, identity, style (unintended changes).\n"
    "End with exactly two lines:\nIMPLEMENTED: <0-10, how completely the asked change is done>\n"
    "UNINTENDED: <0-10, how much else changed>"
)
VERDICT = re.compile(r"IMPLEMENTED:\s*(\d+(?:\.\d+)?)\s*(?:/\s*10)?.*?UNINTENDED:\s*(\d+(?:\.\d+)?)", re.S | re.I)


def parse_verdict(text: str) -> tuple[float, float]:
    """The judge's last `IMPLEMENTED: a` ... `UNINTENDED: b` pair as (a / 10, b / 10), each clipped
    to [0, 1]; (0, 1), the worst verdict, when the text has none (an unreadable answer earns nothing)."""
    found = VERDICT.findall(text)
    if not found:
        return 0.0, 1.0
    implemented, unintended = (min(max(float(v) / 10, 0.0), 1.0) for v in found[-1])
    return implemented, unintended


def to_pil(images: torch.Tensor) -> list[Any]:
    """(B, 3, H, W) in [0, 1] -> PIL images."""
    from PIL import Image

    arrays = (images.detach().float().clamp(0, 1).permute(0, 2, 3, 1).cpu().numpy() * 255).round().astype(np.uint8)
    return [Image.fromarray(a) for a in arrays]


class InstructPix2PixEditor(nn.Module):
    """InstructPix2Pix from local weights (module docstring); edit(images, instructions) -> images.

    Args:
        model_id: Hugging Face id looked up in the Hugging Face cache.
        local_dir: A diffusers-format folder to load instead of the cache.
        revision: Revision in the cache (null: the cached main).
        dtype: Weights and compute dtype.
        num_steps: Denoising steps per edit.
        guidance_scale: Text guidance.
        image_guidance_scale: Image guidance (how closely the edit follows the input image).
    """

    def __init__(self, model_id: str = "timbrooks/instruct-pix2pix", local_dir: str | None = None,
                 revision: str | None = None, dtype: Literal["float32", "float16", "bfloat16"] = "float16",
                 num_steps: PositiveInt = 20, guidance_scale: PositiveFloat = 7.5,
                 image_guidance_scale: PositiveFloat = 1.5) -> None:
        super().__init__()
        folder = resolve_local(model_id, "instruct_pix2pix", local_dir, revision, random_init=False)
        diffusers = require("diffusers")
        with offline():
            self.pipe = diffusers.StableDiffusionInstructPix2PixPipeline.from_pretrained(
                folder, torch_dtype=DTYPES[dtype], local_files_only=True, safety_checker=None)
        self.pipe.set_progress_bar_config(disable=True)
        self.unet = self.pipe.unet  # registered, so Lightning moves it with the task
        self.num_steps, self.guidance_scale, self.image_guidance_scale = num_steps, guidance_scale, image_guidance_scale

    @torch.no_grad()
    def edit(self, images: torch.Tensor, instructions: list[str]) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] and B instructions -> the edited images, same shape."""
        self.pipe.to(images.device)
        out = self.pipe(prompt=instructions, image=images, num_inference_steps=self.num_steps,
                        guidance_scale=self.guidance_scale, image_guidance_scale=self.image_guidance_scale,
                        output_type="pt")
        return out.images.to(images.device).float()


class AgenticVLMJudge:
    """Chain-of-thought VLM judge of edits (module docstring); called as
    judge(source, edited, instructions) -> {"implemented", "unintended"} (B,) in [0, 1].

    Args:
        model_id: Hugging Face id looked up in the Hugging Face cache.
        local_dir: A folder with config.json and the weights to load instead of the cache.
        revision: Revision in the cache.
        dtype: Weights dtype.
        max_new_tokens: Length budget of the reasoning.
        device: Where the VLM runs (null: cuda when available).
    """

    def __init__(self, model_id: str = "Qwen/Qwen2.5-VL-7B-Instruct", local_dir: str | None = None,
                 revision: str | None = None, dtype: Literal["float32", "float16", "bfloat16"] = "bfloat16",
                 max_new_tokens: PositiveInt = 512, device: str | None = None) -> None:
        folder = resolve_local(model_id, "vlm judge", local_dir, revision, marker="config.json", random_init=False)
        transformers = require("transformers")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        with offline():
            self.processor = transformers.AutoProcessor.from_pretrained(folder, local_files_only=True)
            self.model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
                folder, torch_dtype=DTYPES[dtype], local_files_only=True).to(self.device).eval()
        self.max_new_tokens = max_new_tokens

    @torch.no_grad()
    def reason(self, source: Any, edited: Any, instruction: str) -> str:
        """The VLM's answer for one (source, edited) pair of PIL images."""
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "image"},
                                                 {"type": "text", "text": PROMPT.format(instruction=instruction)}]}]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
        inputs = self.processor(text=[text], images=[source, edited], return_tensors="pt").to(self.device)
        out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        return self.processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)[0]

    def __call__(self, source: torch.Tensor, edited: torch.Tensor, instructions: list[str]) -> dict[str, torch.Tensor]:
        verdicts = [parse_verdict(self.reason(s, e, i)) for s, e, i in zip(to_pil(source), to_pil(edited), instructions)]
        implemented, unintended = (torch.tensor(v) for v in zip(*verdicts))
        return {"implemented": implemented, "unintended": unintended}


class EditInstructions(L.LightningDataModule):
    """Local JSON lines of {"image": path (absolute, or relative to the file), "instruction": text}.

    Args:
        path: The file; null reads the variable named by `env`.
        env: Environment variable holding the file when `path` is null.
        size: Side the images are resized to (square).
        batch_size: Edits per batch.
    """

    def __init__(self, path: str | None = None, env: str = "EXPSPEC_EDIT_BENCHMARK", size: PositiveInt = 512,
                 batch_size: PositiveInt = 4) -> None:
        super().__init__()
        self.path = Path(local_path("edit_instructions", "data.path", path, env,
                                    "a JSON-lines file of {image, instruction} edit records"))
        self.size, self.batch_size = size, batch_size

    def _load(self) -> list[dict[str, Any]]:
        from PIL import Image

        rows = []
        for line in self.path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                image = Path(record["image"]) if os.path.isabs(record["image"]) else self.path.parent / record["image"]
                pixels = np.asarray(Image.open(image).convert("RGB").resize((self.size, self.size)), np.float32) / 255
                rows.append({"x": torch.from_numpy(pixels).permute(2, 0, 1), "instruction": record["instruction"]})
        return rows

    def test_dataloader(self) -> DataLoader:
        collate = lambda rows: {"x": torch.stack([r["x"] for r in rows]), "instruction": [r["instruction"] for r in rows]}  # noqa: E731
        return DataLoader(self._load(), batch_size=self.batch_size, collate_fn=collate)


class EditEvaluation(L.LightningModule):
    """Edit each test image with the editor and score it with the judge and the reward (module docstring).

    Args:
        model: The editor (runtime, from `model:`), with edit(images, instructions).
        judge: The edit judge, called as judge(source, edited, instructions).
        reward: The edit reward that combines the judge's scores.
    """

    LOGGED_METRICS = ("test/implemented", "test/unintended", "test/reward")

    def __init__(self, model: nn.Module, judge: Judge, reward: Reward) -> None:
        super().__init__()
        if not callable(getattr(model, "edit", None)):
            raise ValueError(f"edit_evaluation needs an editor with edit(images, instructions), got {type(model).__name__}")
        self.model, self.judge, self.reward = model, judge, reward

    def training_step(self, batch: Any, batch_idx: int) -> None:
        raise RuntimeError("task 'edit_evaluation' does not train: run it with `phases: [test]`")

    def configure_optimizers(self) -> None:
        return None

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        edited = self.model.edit(batch["x"], batch["instruction"])
        verdict = self.judge(batch["x"], edited, batch["instruction"])
        values = {**verdict, "reward": self.reward(verdict["implemented"], verdict["unintended"])}
        for name, value in values.items():
            self.log(f"test/{name}", value.float().mean(), on_epoch=True, batch_size=len(edited))
