"""A test stuck inside a C call fails the run within its timeout, with the stacks printed.

librdkafka's Consumer.close() once held a CI run for 13 minutes: pytest-timeout's signal method cannot
interrupt a thread blocked in C. This runs a child pytest, under this project's own pytest settings, on
a test that deadlocks on a pthread mutex inside libc (a wait no signal ends), and checks that the child
is ended by the timeout in seconds and prints where it was stuck.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.paths import ROOT

_STUCK_IN_C = textwrap.dedent(
    """
    import ctypes

    def test_blocked_in_c():
        libc = ctypes.CDLL(None)
        mutex = ctypes.create_string_buffer(64)  # a zeroed pthread_mutex_t is a default (non-recursive) mutex
        libc.pthread_mutex_lock(mutex)
        libc.pthread_mutex_lock(mutex)  # deadlock inside C; the GIL is released by ctypes
    """
)


def test_a_test_blocked_in_a_c_call_fails_within_its_timeout_with_stacks(tmp_path: Path) -> None:
    test_file = tmp_path / "test_stuck.py"
    test_file.write_text(_STUCK_IN_C)
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-o", "timeout=3", str(test_file)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    output = child.stdout + child.stderr
    assert child.returncode != 0, output
    assert elapsed < 60, f"the child ran {elapsed:.0f} s: the timeout did not end it"
    assert "Timeout" in output and "test_blocked_in_c" in output, output
