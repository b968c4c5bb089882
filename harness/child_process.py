"""Children that cannot outlive the test run: pass `preexec_fn=die_with_parent` to subprocess.Popen."""

from __future__ import annotations

import ctypes
import signal
import sys

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _set_parent_death_signal() -> None:
    # Runs in the child between fork and exec. The kernel sends SIGKILL when the *thread* that forked
    # it exits, so start children from the main thread (pytest fixtures and tests run there).
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# A pytest or `make controlplane` killed with -9 then leaves no server behind. Linux only; elsewhere the
# fixtures' normal teardown is all there is.
die_with_parent = _set_parent_death_signal if sys.platform == "linux" else None
