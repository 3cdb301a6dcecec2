"""Registry entries of the genomics family (bacbench): importing this imports nothing."""

ENTRIES = {
    "data": {
        "synthetic_genomes": "components.genomics.data:SyntheticGenomes",
        "bacbench_files": "components.genomics.data:BacBenchFiles",
    },
    "models": {
        "protein_encoder": "components.genomics.models:ProteinEncoder",
        "genome_context": "components.genomics.models:GenomeContext",
        "genomic_lm": "components.genomics.models:GenomicLM",
    },
    "tasks": {"genome_lm": "components.genomics.task:GenomeLM"},
}
