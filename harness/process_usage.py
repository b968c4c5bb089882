"""What a process holds right now, from /proc: resident memory, open descriptors, CPU time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessUsage:
    rss_bytes: int
    peak_rss_bytes: int  # VmHWM: the most resident memory the process ever had
    cpu_seconds: float  # user + system, every thread
    open_files: int  # every descriptor: files, sockets, pipes
    sockets: int
    threads: int

    @classmethod
    def of(cls, pid: int) -> ProcessUsage:
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        targets = []
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                targets.append(str(fd.readlink()))
            except FileNotFoundError:  # closed while listed
                continue
        return cls(
            rss_bytes=int(status["VmRSS"].split()[0]) * 1024,
            peak_rss_bytes=int(status["VmHWM"].split()[0]) * 1024,
            cpu_seconds=(int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK"),
            open_files=len(targets),
            sockets=sum(t.startswith("socket:") for t in targets),
            threads=int(status["Threads"]),
        )
