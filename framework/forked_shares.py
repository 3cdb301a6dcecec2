"""`exp validate` of many files on several cores: contiguous shares of the list, the first checked in
this process and each other in a child forked from it (imports already paid), the results back in
order. A folder's files stay together, so each `extends` parent is parsed once per share.

Measured (benchmarks/validate_speed.py workload, 10 copies of specs/, 2,930 files, CPU seconds on a
2-core machine): 4.70 s in all either way; the longest process 2.47 s in two shares against 4.69 s
in one, so on an idle 2-core machine the wait is about half.
"""

from __future__ import annotations

import os
from typing import Any, Callable, TypeVar

Item, Result = TypeVar("Item"), TypeVar("Result")

# From this many items on, one share per core, each of at least half as many (62 files: 0.16-0.19 s
# of checking in one process, 0.12-0.135 s in two; below ~20 files a share, a fork costs what it saves).
PARALLEL_FILES = 40


def in_shares(work: Callable[[list[Item]], list[Result]], items: list[Item]) -> list[Result]:
    """`work(items)`, done in contiguous shares of `items` from PARALLEL_FILES items on, on a
    machine with several cores and `fork`: one share per core, each of at least PARALLEL_FILES / 2
    items (below that, a fork costs what it saves). `work` returns one plain, picklable result per
    item; they come back in the order of `items`."""
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                  max(1, len(items) * 2 // PARALLEL_FILES))
    if workers < 2 or not hasattr(os, "fork"):
        return work(items)
    size = -(-len(items) // workers)
    return _forked_shares(work, [items[i:i + size] for i in range(0, len(items), size)])


def _forked_shares(work: Callable[[list[Item]], list[Result]], shares: list[list[Item]]) -> list[Result]:
    """`work` of every share, the first in this process and each other in a child forked from it
    (imports paid), which sends its result back through a pipe. A bare fork, not a process
    pool: starting one (its queues, threads and imports) cost 40-60 ms, a tenth of checking 62 files.
    A child that fails or dies is an error that says so, never a result silently missing."""
    import pickle

    children = []
    for share in shares[1:]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: nothing of the parent's (buffered output, exit handlers) runs here
            os.close(read)
            code = 0
            try:
                payload = pickle.dumps(("done", work(share)))
            except BaseException:  # noqa: BLE001  (sent to the parent, which raises it)
                import traceback

                payload, code = pickle.dumps(("failed", traceback.format_exc())), 1
            with os.fdopen(write, "wb") as out:
                out.write(payload)
            os._exit(code)
        os.close(write)
        children.append((pid, read))
    try:
        done = work(shares[0])
    finally:
        results = [_child_result(pid, read) for pid, read in children]
    for kind, result in results:
        if kind != "done":
            raise RuntimeError(f"checking spec files in a forked process failed:\n{result}")
        done += result
    return done


def _child_result(pid: int, read: int) -> tuple[str, Any]:
    import pickle

    with os.fdopen(read, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        return "failed", f"the process ended without a result ({_status_text(status)})"
    return pickle.loads(payload)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
