"""What `exp validate` already found, kept between commands: a result per file, reused while
nothing it depends on changed.

Checking a file costs a few milliseconds, and the imports it needs (YAML, pydantic, jsonschema,
the registry) about 0.4 s, while reading and hashing the files a result depends on costs
microseconds. So `exp validate` first looks each file up here and imports the checker only for
the files it must check (`--no-cache` checks everything).

A result is reused only when all of these are as they were when it was computed:
- every file the check read: the spec, its `extends` chain, the upstream specs an `init: {spec}` or
  a claims file names, by content (BLAKE2 of the bytes), and every file whose existence it tested
  (recorded as missing), so creating, deleting or editing any of them invalidates it;
- the checker: the size and mtime of every file of framework/ (the committed schema's root
  framework/spec.schema.json among them), of registry.py, and of components/registry.py,
  components/*/registry.py and the schema fragments next to them (framework/schema_files.py), the
  Python version and interpreter, and the mtime of each folder on sys.path (installing or removing
  a package, e.g. a plugin with components, changes its site-packages folder);
- the spelling of the path on the command line and the current directory (messages show the path as
  given, and `init.checkpoint` is read relative to the current directory).
A check that read a component's live signature (a plugin's, or one missing from the committed
schema) depends on that component's code and is not cached, nor is any later check of the same
command (a node checked once is reused by later specs, so they may rest on it without reading it). Entries are JSON files written
atomically (a temporary file renamed), so concurrent commands never read half an entry; a
damaged entry is a miss. Where: `<result cache>/validate/` (the command's RunContext.cache_dir), next to the result
cache (framework/result_cache.py `cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERSION = 1  # of the entry format

# Files the running check read or tested, by the path it used: content digest, or None when the
# path was not a readable file. Recording is on only inside `recording()`.
_READS: dict[str, str | None] | None = None


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def note_read(path: Any, content: str | None) -> None:
    """Called by the loader each time a check uses a file it read: `content` is the `digest` of
    its bytes (None: it could not be read)."""
    if _READS is not None:
        _READS[str(path)] = content


def note_exists(path: Any) -> bool:
    """`Path(path).is_file()`, recorded as a dependency of the running check."""
    exists = Path(path).is_file()
    if _READS is not None and str(path) not in _READS:
        _READS[str(path)] = _file_digest(str(path)) if exists else None
    return exists


def start_recording() -> None:
    global _READS
    _READS = {}


def stop_recording() -> dict[str, str | None]:
    global _READS
    reads, _READS = _READS or {}, None
    return reads


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as file:
            return digest(file.read())
    except OSError:
        return None


def fingerprint() -> str:
    """The checker's identity (module docstring): changes when its code, the committed schema, a
    registry table, the interpreter or the installed packages change."""
    parts = [sys.version, sys.executable, str(VERSION)]
    for top, _dirs, names in os.walk(ROOT / "framework"):
        parts += _stats(top, sorted(n for n in names if not n.endswith(".pyc")))
    parts += _stats(str(ROOT), ["registry.py"])
    components = ROOT / "components"
    if components.is_dir():
        parts += _stats(str(components), ["registry.py", "schema.json"])
        for entry in sorted(os.scandir(components), key=lambda e: e.name):
            if entry.is_dir():
                parts += _stats(entry.path, ["registry.py", "schema.json"])
    for folder in sys.path:
        try:
            parts.append(f"{folder}:{os.stat(folder or '.').st_mtime_ns}")
        except OSError:
            continue
    return digest("\n".join(parts).encode())


def _stats(folder: str, names: list[str]) -> list[str]:
    out = []
    for name in names:
        try:
            stat = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        out.append(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return out


class ValidateCache:
    """Entries of one `exp validate` command (one fingerprint, one current directory)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder  # <the context's result cache>/validate (framework/invocation.py)
        self.salt = f"{fingerprint()}\n{os.getcwd()}\n"
        self._digests: dict[str, str | None] = {}  # files read by several entries (an `extends` base) once

    def _digest(self, path: str) -> str | None:
        if path not in self._digests:
            self._digests[path] = _file_digest(path)
        return self._digests[path]

    def _entry(self, path: Path) -> Path:
        return self.folder / f"{digest((self.salt + str(path)).encode())}.json"

    def get(self, path: Path) -> dict[str, Any] | None:
        """The cached result of checking `path` ({"text": the error's text or None, "problems":
        the problems as `--format json` writes them}), or None when there is none or a dependency
        changed."""
        try:
            entry = json.loads(self._entry(path).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("path") != str(path):
            return None
        for dependency, expected in entry.get("reads", {}).items():
            if self._digest(dependency) != expected:
                return None
        return {"text": entry.get("text"), "problems": entry.get("problems", [])}

    def put(self, path: Path, reads: dict[str, str | None], text: str | None, problems: list[dict]) -> None:
        """Write a result (atomically; a cache that cannot be written is skipped silently: it only
        saves time)."""
        import tempfile

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "w") as file:
                json.dump({"path": str(path), "reads": reads, "text": text, "problems": problems}, file)
            os.replace(tmp, self._entry(path))
        except OSError:
            pass
