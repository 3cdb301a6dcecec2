"""Genomes as data (`bacbench`): synthetic bacterial genomes with planted gene-level and multi-gene
signals, and BacBench-style files at paper scale.

A genome is an ordered list of genes; a gene is its protein sequence (amino-acid tokens 1-20, 0
pads). Every split holds whole genomes (a gene never appears in two splits):

- `x` (N, G, P) long: the proteins of each genome in genome order;
- `function` (N, G) long: each gene's function class (the gene-level task);
- `y` (N,) long: the genome's phenotype (the genome-level, multi-gene task).

`synthetic_genomes` plants both signals: genes come from `n_families` families, each a random
prototype protein that members copy with `mutation` of their residues redrawn; a family's function
is `family % n_functions`, so the gene-level task is readable from the protein alone. Two marker
families (0 and 1) occur once in every genome, so their presence says nothing; the phenotype is
whether they sit next to each other (an operon, phenotype 1) or at least `min_gap` genes apart
(phenotype 0), half the genomes each. The genome-level task thus needs gene order: a bag of the
genes' proteins holds no signal about it (chance by construction).

`bacbench_files` (paper scale) reads one GenBank file per genome (biopython's SeqIO, the `bio`
extra): the CDS translations in file order, with labels from two CSV files. Nothing is downloaded.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from components.data.base import Arrays, ArrayDataModule
from components.local_assets import local_path
from components.types import NonNegativeInt, PositiveInt, Probability
from framework.extras import require

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # tokens 1-20; 0 pads
PAD, VOCAB = 0, len(AMINO_ACIDS) + 1


def encode_protein(sequence: str, length: int) -> np.ndarray:
    """Amino-acid tokens (1-20) of `sequence`, cut or padded with 0 to `length`; other letters
    (X, B, Z, U, O, the stop `*`) are dropped."""
    tokens = [AMINO_ACIDS.index(c) + 1 for c in sequence.upper() if c in AMINO_ACIDS][:length]
    return np.pad(np.asarray(tokens, np.int64), (0, length - len(tokens)))


class SyntheticGenomes(ArrayDataModule):
    """Synthetic genomes with a protein-level and an order-level signal (module docstring).

    Args:
        n_train, n_val, n_test: Genomes per split.
        genes: Genes per genome.
        protein_length: Residues per protein.
        n_families: Gene families (0 and 1 are the two marker families).
        n_functions: Function classes (family % n_functions).
        mutation: Share of a member's residues redrawn from its family's prototype.
        min_gap: Least distance between the two markers in a phenotype-0 genome.
        shuffle_order: Shuffle each genome's genes after labelling (a control: the phenotype is then
            no longer written in the gene order any model sees).
        seed: Seed of the prototypes, genomes and labels.

    Plus the base data module's batch_size (genomes per batch).
    """

    def __init__(self, n_train: PositiveInt = 2000, n_val: PositiveInt = 100, n_test: PositiveInt = 200,
                 genes: PositiveInt = 16, protein_length: PositiveInt = 24, n_families: PositiveInt = 24,
                 n_functions: PositiveInt = 4, mutation: Probability = 0.15, min_gap: PositiveInt = 3,
                 shuffle_order: bool = False, seed: int = 0, batch_size: PositiveInt = 16) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if n_families < 3 or n_functions > n_families:
            raise ValueError(f"n_families must be >= 3 and >= n_functions, got {n_families} and {n_functions}")
        if genes < min_gap + 2:
            raise ValueError(f"genes must be >= min_gap + 2 = {min_gap + 2}, got {genes}")
        self.sizes = {"train": n_train, "val": n_val, "test": n_test}
        self.genes, self.protein_length, self.n_families = genes, protein_length, n_families
        self.n_functions, self.mutation, self.min_gap, self.seed = n_functions, mutation, min_gap, seed
        self.shuffle_order = shuffle_order

    def _genome(self, rng: np.random.Generator, adjacent: bool) -> np.ndarray:
        """Family of each position: both markers once, adjacent or >= min_gap apart, the rest others."""
        families = rng.integers(2, self.n_families, self.genes)
        while True:
            a, b = rng.choice(self.genes, 2, replace=False)
            if (abs(a - b) == 1) == adjacent and (adjacent or abs(a - b) >= self.min_gap):
                break
        families[a], families[b] = 0, 1
        return families

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        prototypes = rng.integers(1, VOCAB, (self.n_families, self.protein_length))
        out: dict[str, Arrays] = {}
        for split, n in self.sizes.items():
            phenotype = rng.permutation(np.arange(n) % 2)
            families = np.stack([self._genome(rng, bool(p)) for p in phenotype])
            if self.shuffle_order:
                families = rng.permuted(families, axis=1)
            proteins = prototypes[families]
            redraw = rng.random(proteins.shape) < self.mutation
            proteins = np.where(redraw, rng.integers(1, VOCAB, proteins.shape), proteins)
            out[split] = {"x": proteins.astype(np.int64), "function": (families % self.n_functions).astype(np.int64),
                          "y": phenotype.astype(np.int64)}
        return out


class BacBenchFiles(ArrayDataModule):
    """BacBench-style genomes from local files (paper scale): `<root>/genomes/<genome>.gbk` (GenBank,
    the CDS features' `translation` qualifiers in file order), `<root>/gene_function.csv` (genome,
    locus_tag, label) and `<root>/phenotype.csv` (genome, label, split: train/val/test). Genomes are
    cut or padded (with empty proteins) to `genes`; a gene without a label gets function -1
    (skipped by the gene-level probe).

    Args:
        root: The folder ($BACBENCH_DIR when null).
        genes: Genes per genome kept (file order).
        protein_length: Residues per protein kept.

    Plus the base data module's batch_size.
    """

    def __init__(self, root: str | None = None, genes: PositiveInt = 512, protein_length: PositiveInt = 512,
                 batch_size: PositiveInt = 4, split_seed: NonNegativeInt = 0) -> None:
        super().__init__(batch_size=batch_size, standardize=False, split_seed=split_seed)
        self.root = local_path("bacbench_files", "data.root", root, "BACBENCH_DIR",
                               "BacBench folder (genomes/*.gbk, gene_function.csv, phenotype.csv)",
                               needs=("gene_function.csv", "phenotype.csv"),
                               how="Prepare it from the BacBench datasets (GenBank genomes and label tables)")
        self.genes, self.protein_length = genes, protein_length

    def _genome(self, path: Path, labels: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        seq_io = require("Bio.SeqIO", "reading GenBank genomes (bacbench_files)")
        proteins, functions = [], []
        for record in seq_io.parse(str(path), "genbank"):
            for feature in record.features:
                if feature.type == "CDS" and "translation" in feature.qualifiers:
                    proteins.append(encode_protein(feature.qualifiers["translation"][0], self.protein_length))
                    functions.append(labels.get(feature.qualifiers.get("locus_tag", [""])[0], -1))
        proteins, functions = proteins[: self.genes], functions[: self.genes]
        missing = self.genes - len(proteins)
        x = np.concatenate([np.stack(proteins), np.zeros((missing, self.protein_length), np.int64)]) if proteins \
            else np.zeros((self.genes, self.protein_length), np.int64)
        return x, np.asarray(functions + [-1] * missing, np.int64)

    def load(self) -> dict[str, Arrays]:
        root = Path(self.root)
        with open(root / "gene_function.csv", newline="") as f:
            gene_labels: dict[str, dict[str, int]] = {}
            for row in csv.DictReader(f):
                gene_labels.setdefault(row["genome"], {})[row["locus_tag"]] = int(row["label"])
        out: dict[str, dict[str, list]] = {}
        with open(root / "phenotype.csv", newline="") as f:
            for row in csv.DictReader(f):
                x, function = self._genome(root / "genomes" / f"{row['genome']}.gbk", gene_labels.get(row["genome"], {}))
                part = out.setdefault(row["split"], {"x": [], "function": [], "y": []})
                part["x"].append(x), part["function"].append(function), part["y"].append(int(row["label"]))
        return {split: {k: np.stack(v) for k, v in part.items()} for split, part in out.items()}
