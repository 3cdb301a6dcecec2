"""Procedural indoor scenes with known geometry, rendered by analytic ray casting (numpy).

A scene is a closed room (an axis-aligned box seen from inside: floor y = 0, ceiling, four walls)
holding a few objects that stand on the floor: spheres (`shape: sphere`) or boxes turned about the
vertical axis (`shape: box`). A pinhole camera (focal `f` pixels, principal point at the image
centre) sits on an arc around the room's centre and looks at a point above the floor. Each pixel's
ray is intersected with every surface in closed form; the nearest hit gives the depth (the z of
the hit in the camera frame) and the colour: the surface's albedo (a checker texture on the floor,
stripes on the walls, one colour per object) times Lambertian shading from one directional light
plus ambient.

Written here, not taken from a library: the rasterisers that install on CPU torch (pytorch3d,
nvdiffrast, kaolin) need compiled extensions or CUDA, and ray casting spheres and boxes is a few
closed-form intersections. Everything is drawn from a numpy Generator, so a seed fixes a scene.

Conventions: world y is up; camera frame x right, y down, z forward (OpenCV); a pose is the 4 x 4
camera-to-world matrix; depth is the camera-frame z.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LIGHT = np.array([0.4, 0.8, 0.3]) / np.linalg.norm([0.4, 0.8, 0.3])


@dataclass
class Scene:
    """A room of half-size `room` (x and z in [-room, room], y in [0, height]) and its objects."""

    room: float
    height: float
    shape: str
    centers: np.ndarray           # (K, 3); a sphere's centre or a box's centre
    sizes: np.ndarray             # (K,) sphere radius or box half-extent
    angles: np.ndarray            # (K,) a box's turn about y (unused for spheres)
    colors: np.ndarray            # (K, 3)
    wall_color: np.ndarray = field(default_factory=lambda: np.array([0.55, 0.6, 0.7]))


def random_scene(rng: np.random.Generator, shape: str, room: float, objects: int = 3) -> Scene:
    """A room with `objects` spheres or boxes of random size, colour and place, standing on the floor."""
    sizes = rng.uniform(0.3, 0.55, objects)
    xz = rng.uniform(-1.3, 1.3, (objects, 2))
    centers = np.stack([xz[:, 0], sizes, xz[:, 1]], axis=1)
    return Scene(room=room, height=2.5, shape=shape, centers=centers, sizes=sizes,
                 angles=rng.uniform(0, np.pi / 2, objects), colors=rng.uniform(0.15, 0.95, (objects, 3)),
                 wall_color=rng.uniform(0.4, 0.8, 3))


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The camera-to-world pose of a camera at `eye` looking at `target` (y down in the image)."""
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, down, forward, eye
    return pose


def arc_pose(radius: float, height: float, azimuth: float) -> np.ndarray:
    """A camera on the circle of `radius` at `height`, looking at the room's centre 0.4 above the floor."""
    eye = np.array([radius * np.sin(azimuth), height, radius * np.cos(azimuth)])
    return look_at(eye, np.array([0.0, 0.4, 0.0]))


def pixel_rays(size: int, focal: float) -> np.ndarray:
    """(size * size, 3) camera-frame ray directions with z = 1, row-major over the image."""
    centre = (size - 1) / 2
    v, u = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    return np.stack([(u - centre) / focal, (v - centre) / focal, np.ones_like(u, dtype=float)], -1).reshape(-1, 3)


def hit_spheres(origin, dirs, scene: Scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, normal, object index) of the nearest sphere hit per ray (t = inf on a miss)."""
    best_t = np.full(len(dirs), np.inf)
    normal, index = np.zeros_like(dirs), np.full(len(dirs), -1)
    for k, (c, r) in enumerate(zip(scene.centers, scene.sizes)):
        oc = origin - c
        a, b, cc = (dirs * dirs).sum(1), 2 * (dirs @ oc), oc @ oc - r * r
        disc = b * b - 4 * a * cc
        t = np.where(disc >= 0, (-b - np.sqrt(np.maximum(disc, 0))) / (2 * a), np.inf)
        t = np.where(t > 1e-4, t, np.inf)
        closer = t < best_t
        best_t = np.where(closer, t, best_t)
        points = origin + np.where(closer, t, 0.0)[:, None] * dirs
        normal = np.where(closer[:, None], (points - c) / r, normal)
        index = np.where(closer, k, index)
    return best_t, normal, index


def hit_boxes(origin, dirs, scene: Scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, normal, object index) of the nearest hit on the turned boxes (slab method in each box's frame)."""
    best_t = np.full(len(dirs), np.inf)
    normal, index = np.zeros_like(dirs), np.full(len(dirs), -1)
    for k, (c, h, angle) in enumerate(zip(scene.centers, scene.sizes, scene.angles)):
        rot = np.array([[np.cos(angle), 0, -np.sin(angle)], [0, 1, 0], [np.sin(angle), 0, np.cos(angle)]])
        o, d = rot @ (origin - c), dirs @ rot.T
        d = np.where(np.abs(d) < 1e-9, 1e-9, d)
        t1, t2 = (-h - o) / d, (h - o) / d
        near, far = np.minimum(t1, t2), np.maximum(t1, t2)
        t_in, t_out = near.max(1), far.min(1)
        t = np.where((t_in <= t_out) & (t_in > 1e-4), t_in, np.inf)
        face = near.argmax(1)
        local = np.zeros_like(d)
        local[np.arange(len(d)), face] = -np.sign(d[np.arange(len(d)), face])
        closer = t < best_t
        best_t = np.where(closer, t, best_t)
        normal = np.where(closer[:, None], local @ rot, normal)
        index = np.where(closer, k, index)
    return best_t, normal, index


def hit_room(origin, dirs, scene: Scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, inward normal, albedo) where each ray leaves the room (the camera is inside it)."""
    low = np.array([-scene.room, 0.0, -scene.room])
    high = np.array([scene.room, scene.height, scene.room])
    d = np.where(np.abs(dirs) < 1e-9, 1e-9, dirs)
    far = np.maximum((low - origin) / d, (high - origin) / d)
    t, axis = far.min(1), far.argmin(1)
    points = origin + t[:, None] * dirs
    normal = np.zeros_like(dirs)
    normal[np.arange(len(d)), axis] = -np.sign(d[np.arange(len(d)), axis])
    checker = (np.floor(points[:, 0] / 0.5) + np.floor(points[:, 2] / 0.5)) % 2
    floor = np.where(checker[:, None] > 0, 0.85, 0.3) * np.ones(3)
    stripes = 0.75 + 0.25 * (np.floor(points[:, 1] / 0.4) % 2)[:, None]
    albedo = np.where((axis == 1)[:, None] & (normal[:, 1] > 0)[:, None], floor, scene.wall_color * stripes)
    return t, normal, albedo


def render(scene: Scene, pose: np.ndarray, size: int, focal: float) -> tuple[np.ndarray, np.ndarray]:
    """(image (3, size, size) in [0, 1], depth (size, size)) of `scene` seen from `pose`."""
    rays = pixel_rays(size, focal)
    dirs = rays @ pose[:3, :3].T
    origin = pose[:3, 3]
    t, normal, albedo = hit_room(origin, dirs, scene)
    hit = hit_spheres if scene.shape == "sphere" else hit_boxes
    t_obj, n_obj, index = hit(origin, dirs, scene)
    on_object = t_obj < t
    t = np.where(on_object, t_obj, t)
    normal = np.where(on_object[:, None], n_obj, normal)
    albedo = np.where(on_object[:, None], scene.colors[np.maximum(index, 0)], albedo)
    shade = 0.35 + 0.65 * np.clip(normal @ LIGHT, 0, 1)
    image = np.clip(albedo * shade[:, None], 0, 1).T.reshape(3, size, size)
    return image.astype(np.float32), t.reshape(size, size).astype(np.float32)  # rays have z = 1: t is depth


def relative_pose(pose_i: np.ndarray, pose_j: np.ndarray) -> np.ndarray:
    """The 4 x 4 transform of camera-i coordinates into camera-j coordinates."""
    return np.linalg.inv(pose_j) @ pose_i
