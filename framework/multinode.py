"""What every rank of a multi-node run needs once: the weights of `init: {spec: ...}`.

Under torchrun (`--nnodes N`), each rank runs `exp run SPEC` itself, Lightning sets up DDP, and
nothing of ours launches anything. An upstream spec to initialize from is obtained (from the
result cache, else trained) on global rank zero only; the other ranks wait for it on torchrun's
own key-value server (the agent's TCPStore at MASTER_ADDR:MASTER_PORT; `agent` below), before
any process group exists, so that no collective of the upstream's training waits on them. Rank zero publishes the
weights' path and sha256; a rank that has that file with that digest (same machine, or a shared
file system) uses it, and rank zero sends the bytes through the agent to the ranks that do not,
which write them into their own result cache (`<cache>/<upstream hash>/final.ckpt`). When rank zero
fails, the others raise with its error instead of waiting.

Outside torchrun (a single process, Lightning's own launcher on one machine, whose children
start after rank zero resolved it into the shared result cache) every process resolves it itself.
Under `srun` without torchrun there is no such agent: run the upstream spec first.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable


def under_torchrun() -> bool:
    return os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and int(os.environ.get("WORLD_SIZE", "1")) > 1


def resolved_once(resolve: Callable[[], str], what: str, cache: Path) -> str:
    """`resolve()` (a file's path) on global rank zero; on the other ranks the same file, received
    when it is not on this machine (see the module docstring). `what` names its keys."""
    if not under_torchrun():
        return resolve()
    agent = _agent()
    prefix = (f"expspec/{os.environ.get('TORCHELASTIC_RUN_ID', 'none')}/"
              f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{what}")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank == 0:
        return _publish(agent, prefix, resolve, world)
    return _receive(agent, prefix, rank, cache)


def _agent() -> Any:
    import torch.distributed as dist

    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                         timeout=timedelta(minutes=30))


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _publish(agent: Any, prefix: str, resolve: Callable[[], str], world: int) -> str:
    try:
        path = resolve()
    except BaseException as error:
        agent.set(f"{prefix}/error", f"{type(error).__name__}: {error}")
        raise
    agent.set(f"{prefix}/path", json.dumps({"path": path, "sha256": _digest(Path(path))}))
    needs = [agent.get(f"{prefix}/need/{r}") for r in range(1, world)]  # waits for each rank's answer
    if b"1" in needs:
        agent.set(f"{prefix}/bytes", Path(path).read_bytes())
    return path


def _receive(agent: Any, prefix: str, rank: int, cache: Path) -> str:
    while not agent.check([f"{prefix}/path"]):  # rank zero may train the upstream for hours
        if agent.check([f"{prefix}/error"]):
            raise RuntimeError(f"rank 0 could not obtain the init weights: {agent.get(f'{prefix}/error').decode()}")
        time.sleep(1.0)
    published = json.loads(agent.get(f"{prefix}/path"))
    local = Path(published["path"])
    have = local.is_file() and _digest(local) == published["sha256"]
    agent.set(f"{prefix}/need/{rank}", "0" if have else "1")
    if have:
        return str(local)
    target = cache / local.parent.name / local.name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(agent.get(f"{prefix}/bytes"))
    if _digest(partial) != published["sha256"]:
        raise RuntimeError(f"the init weights received from rank 0 do not match their sha256 {published['sha256']}")
    partial.replace(target)
    return str(target)
