"""The security state's files in the data directory: versioned JSON, written atomically and privately.

Like the engine's checkpoints (tmp, fsync, rename, directory fsync), so a crash leaves the old or the new
file, never a torn one; unlike them the file is created readable by the broker's user only (0600), since
it holds salted credentials and who may do what. A file with an unknown version refuses to load (the
broker does not start) rather than being overwritten.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class CorruptSecurityFileError(ValueError):
    """A credentials or ACL file that cannot be read; the broker refuses to start rather than lose it."""


def write_private(path: Path, doc: dict[str, Any]) -> None:
    data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read(path: Path, version: int) -> dict[str, Any] | None:
    """The document, or None when the file does not exist yet."""
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (ValueError, OSError) as exc:
        raise CorruptSecurityFileError(f"{path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != version:
        raise CorruptSecurityFileError(
            f"{path}: unknown version {doc.get('version') if isinstance(doc, dict) else doc!r}"
        )
    return doc
