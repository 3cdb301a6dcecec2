"""3D geometry: procedural scenes with known geometry, pointmap models, Chamfer distance, and the
adaptation of a pretrained geometry model from unlabeled video (sparse SfM anchors, dense
multi-view consistency, trajectory selection, replay of labelled anchor data).

Paper: specs/sage_geo/README.md.
"""
