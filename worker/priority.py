"""Background threads yield the CPU to requests: a lower scheduling priority per thread.

On Linux a thread has its own nice value, and threads it starts inherit it. The background
embedder runs the model flat out on every core while it catches up (after an import, a reindex
or a model change: minutes at 100k items); at the same priority as the event loop and the
readers, a search or a prompt's context waited for the cores with it. At nice 10 the kernel
gives a request's threads ~9x its share when both want a core, and the embedder still takes
every idle cycle. Elsewhere (no per-thread nice), nothing changes.
"""

from __future__ import annotations

import os
import sys
import threading

BACKGROUND_NICE = 10


def lower_this_thread(nice: int = BACKGROUND_NICE) -> bool:
    """Give the calling thread (and the threads it starts from now on) nice `nice` if that is
    lower than its priority now; False where it cannot (another OS, a sandbox refusing it)."""
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, tid) >= nice:
            return True
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return False
    return True
