"""Whether a command's process starts numpy's BLAS threads.

numpy's OpenBLAS starts a thread for each further core as it loads, and each one spins
waiting for work before it sleeps: about 0.1 s of CPU a process on a 2-core machine
(`raglabel export` 0.33 -> 0.19 s of CPU), a sixth of a quick eval's, and on a shared
host a core taken from whatever else runs there: the annotators' apps, when a lead's
commands run beside ``raglabel serve``. Only a bootstrap or a randomization test
multiplies matrices large enough to gain from the threads.
"""

from __future__ import annotations

import os
import sys

#: Commands that multiply no matrices worth a thread. ``serve`` starts each tab's app
#: with its own environment, so the apps it serves start with one thread too: their
#: cores are the whole team's. eval decides by its arguments (eval_cmd.py).
PLAIN_COMMANDS = frozenset(
    {"init", "import", "export", "backup", "judge", "assign", "progress", "serve"}
)


def spare_blas_threads() -> None:
    """One BLAS thread for this process, unless numpy is loaded already (too late) or
    the user set a number of their own. Only for a process that is the command's own."""
    if "numpy" in sys.modules:
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
