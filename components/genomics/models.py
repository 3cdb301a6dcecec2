"""The two genomic language models of `bacbench`, both torch's own transformer encoder layers.

`protein_encoder` reads one protein (amino-acid tokens, 0 pads) and is trained by masked-residue
prediction (an ESM-like protein LM); its protein embedding is the mean of its residue states.

`genomic_lm` holds one protein encoder and, for a context arm, one genome context model.
`genome_context` reads a genome as the ordered sequence of its proteins' embeddings (Bacformer's
reading of a genome) and predicts a genome-level label from the mean of its gene states (a linear
head). `window` limits how far a gene sees: `null` is the whole genome, 0 only the gene itself: the
same model, trained the same way, that can only pool its genes' proteins (the protein-level arm of
the genome-level task).
"""

from __future__ import annotations

import torch
from torch import nn

from components.genomics.data import PAD, VOCAB
from components.kinds import Model
from components.types import NonNegativeInt, PositiveInt

MASK = VOCAB  # the mask token, after the 20 amino acids and the pad


def encoder(d_model: int, n_heads: int, n_layers: int) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0, batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)


class ProteinEncoder(nn.Module):
    """A protein LM (module docstring).

    Args:
        protein_length: Residues per protein (positions).
        d_model: Width.
        n_layers: Transformer layers.
        n_heads: Attention heads.
    """

    def __init__(self, protein_length: PositiveInt = 24, d_model: PositiveInt = 32, n_layers: PositiveInt = 2,
                 n_heads: PositiveInt = 4) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB + 1, d_model)
        self.positions = nn.Parameter(torch.randn(protein_length, d_model) * 0.02)
        self.body = encoder(d_model, n_heads, n_layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB)
        self.width = d_model

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        """Residue states (..., P, d) of proteins (..., P); pads are keys no residue attends to."""
        shape = tokens.shape
        flat = tokens.reshape(-1, shape[-1])
        pad = flat == PAD
        h = self.tokens(flat) + self.positions[: shape[-1]]
        h = self.norm(self.body(h, src_key_padding_mask=pad & ~pad.all(1, keepdim=True)))
        return h.reshape(*shape, -1)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Masked-residue logits (..., P, 21) over pad and the 20 amino acids."""
        return self.head(self.hidden(tokens))

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Protein embeddings (..., d): the mean of the residue states over non-pad positions."""
        keep = (tokens != PAD).unsqueeze(-1).float()
        return (self.hidden(tokens) * keep).sum(-2) / keep.sum(-2).clamp_min(1)


class GenomeContext(nn.Module):
    """A genome LM over protein embeddings (module docstring).

    Args:
        d_in: Width of the protein embeddings it reads (the protein encoder's d_model).
        max_genes: Genes per genome (positions).
        d_model: Width.
        n_layers: Transformer layers.
        n_heads: Attention heads.
        window: Genes on each side a gene attends to (null: the whole genome; 0: itself only).
        num_classes: Classes of the genome-level label.
    """

    def __init__(self, d_in: PositiveInt = 32, max_genes: PositiveInt = 16, d_model: PositiveInt = 32,
                 n_layers: PositiveInt = 2, n_heads: PositiveInt = 4, window: NonNegativeInt | None = None,
                 num_classes: PositiveInt = 2) -> None:
        super().__init__()
        self.project = nn.Linear(d_in, d_model)
        self.positions = nn.Parameter(torch.randn(max_genes, d_model))  # unit scale: order must be visible from the start
        self.body = encoder(d_model, n_heads, n_layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        self.window, self.width = window, d_model

    def contextual(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Gene states (B, G, d) from protein embeddings (B, G, d_in)."""
        genes = embeddings.shape[1]
        h = self.project(embeddings) + self.positions[:genes]
        attend = None
        if self.window is not None:
            index = torch.arange(genes, device=h.device)
            attend = (index[:, None] - index[None, :]).abs() > self.window  # True: may not attend
        return self.norm(self.body(h, mask=attend))

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Genome-level logits (B, num_classes) from the mean of the gene states."""
        return self.head(self.contextual(embeddings).mean(1))


class GenomicLM(nn.Module):
    """A genomic LM as one model: its protein encoder and, for a context arm, the genome context
    model reading that encoder's embeddings (`init` from a protein-only run loads `protein.*` and
    leaves `context.*` new, with `strict: false`).

    Args:
        protein: The protein encoder (`protein_encoder`).
        context: The genome context model (`genome_context`), or null (a protein-level model).
    """

    def __init__(self, protein: Model, context: Model | None = None) -> None:
        super().__init__()
        self.protein, self.context = protein, context
