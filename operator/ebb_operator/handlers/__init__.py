"""kopf handlers: one module per kind, plus the settings. Importing this package registers them."""

from __future__ import annotations

from ebb_operator.handlers import compaction_config, delete_records, settings

__all__ = ["compaction_config", "delete_records", "settings"]
