"""Registry entries of the geometry family (sage_geo): data only, importing this imports nothing."""

ENTRIES = {
    "data": {
        "synthetic_scene_video": "components.geometry.data:SyntheticSceneVideo",
        "rgbd_scenes": "components.geometry.rgbd:RGBDScenes",
    },
    "models": {
        "pointmap_cnn": "components.geometry.model:PointmapCNN",
        "vggt_pointmap": "components.geometry.vggt:VGGTPointmap",
    },
    "tasks": {"geometry_adaptation": "components.geometry.task:GeometryAdaptation"},
}
