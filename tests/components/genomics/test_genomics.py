"""The genomics family (bacbench): synthetic genomes plant their two signals where the design says
(function in the protein, phenotype in the marker genes' adjacency only), the context model's window
limits what a gene sees, the task refuses a context objective without a context model, and the
paper-scale loader reads GenBank files through biopython and stops early without them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.genomics.data import BacBenchFiles, SyntheticGenomes, encode_protein
from components.genomics.models import GenomeContext, GenomicLM, ProteinEncoder


def _markers(families_split: dict) -> tuple[np.ndarray, np.ndarray]:
    return families_split["x"], families_split["y"]


def test_synthetic_genomes_plant_function_in_proteins_and_phenotype_in_order() -> None:
    data = SyntheticGenomes(n_train=200, n_val=20, n_test=40, seed=3, mutation=0.0)
    train = data.load()["train"]
    x, y = train["x"], train["y"]
    assert x.shape == (200, 16, 24) and train["function"].shape == (200, 16) and set(np.unique(y)) == {0, 1}
    # mutation 0: a marker is its family's prototype, so markers are found by their exact protein
    first = x[0].tolist()
    prototypes = {tuple(p) for genome in x for p in genome.tolist()}
    assert len(prototypes) == 24
    marker_proteins = [p for p in prototypes if sum(tuple(g) == p for genome in x for g in genome.tolist()) == 200]
    assert len(marker_proteins) == 2  # the two markers occur once in every genome: presence says nothing
    for genome, label in zip(x, y):
        where = [i for i, g in enumerate(genome.tolist()) if tuple(g) in marker_proteins]
        gap = abs(where[0] - where[1])
        assert (gap == 1) == bool(label) and (label or gap >= 3)
    assert first == SyntheticGenomes(n_train=200, n_val=20, n_test=40, seed=3, mutation=0.0).load()["train"]["x"][0].tolist()
    shuffled = SyntheticGenomes(n_train=200, n_val=20, n_test=40, seed=3, mutation=0.0, shuffle_order=True).load()["train"]
    adjacent = []
    for genome in shuffled["x"]:
        where = [i for i, g in enumerate(genome.tolist()) if tuple(g) in marker_proteins]
        adjacent.append(abs(where[0] - where[1]) == 1)
    assert 0.0 < np.mean(np.asarray(adjacent) == shuffled["y"].astype(bool)) < 0.75  # order no longer tells


def test_the_window_limits_what_a_gene_sees() -> None:
    torch.manual_seed(0)
    embeddings = torch.randn(1, 16, 8)
    changed = embeddings.clone()
    changed[0, 5] += 3.0
    for window, affected in ((0, {5}), (1, {4, 5, 6})):
        model = GenomeContext(d_in=8, max_genes=16, d_model=8, n_layers=1, n_heads=2, window=window).eval()
        with torch.no_grad():
            moved = (model.contextual(changed) - model.contextual(embeddings)).abs().sum(-1)[0] > 1e-6
        assert set(torch.nonzero(moved).flatten().tolist()) == affected
    model = GenomeContext(d_in=8, max_genes=16, d_model=8, n_layers=1, n_heads=2, window=None).eval()
    with torch.no_grad():
        assert bool(((model.contextual(changed) - model.contextual(embeddings)).abs().sum(-1) > 1e-6).all())


def test_protein_embeddings_ignore_padding_and_the_task_needs_a_context_model() -> None:
    from components.genomics.task import GenomeLM

    encoder = ProteinEncoder(protein_length=8, d_model=8, n_layers=1, n_heads=2).eval()
    short = torch.tensor([encode_protein("MKV", 8)])
    assert short.tolist() == [[11, 9, 18, 0, 0, 0, 0, 0]]
    with torch.no_grad():
        assert encoder.embed(short).shape == (1, 8)
    with pytest.raises(ValueError, match="need a genomic_lm with a `context` model"):
        GenomeLM(GenomicLM(encoder), torch.optim.Adam, objective="phenotype")


def test_bacbench_files_read_genbank_and_stop_early_without_them(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("BACBENCH_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"bacbench_files: .*BACBENCH_DIR"):
        BacBenchFiles()
    pytest.importorskip("Bio")
    from Bio.Seq import Seq
    from Bio.SeqFeature import FeatureLocation, SeqFeature
    from Bio.SeqRecord import SeqRecord
    from Bio import SeqIO

    (tmp_path / "genomes").mkdir()
    for name in ("g1", "g2"):
        record = SeqRecord(Seq("ATG" * 30), id=name, annotations={"molecule_type": "DNA"})
        for i, protein in enumerate(["MKVLA", "MSTT"]):
            record.features.append(SeqFeature(FeatureLocation(i * 20, i * 20 + 15), type="CDS",
                                              qualifiers={"translation": [protein], "locus_tag": [f"{name}_{i}"]}))
        SeqIO.write(record, tmp_path / "genomes" / f"{name}.gbk", "genbank")
    (tmp_path / "gene_function.csv").write_text("genome,locus_tag,label\ng1,g1_0,2\ng2,g2_1,1\n")
    (tmp_path / "phenotype.csv").write_text("genome,label,split\ng1,1,train\ng2,0,test\n")
    data = BacBenchFiles(root=str(tmp_path), genes=3, protein_length=6).load()
    assert data["train"]["x"].shape == (1, 3, 6) and data["train"]["function"].tolist() == [[2, -1, -1]]
    assert data["test"]["function"].tolist() == [[-1, 1, -1]] and data["test"]["y"].tolist() == [0]
    assert data["train"]["x"][0, 0].tolist() == encode_protein("MKVLA", 6).tolist()
