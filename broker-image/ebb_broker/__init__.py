"""ebb-broker: a Kafka-wire-protocol broker over Ebb's own log engine.

Layers, and the only direction imports may go (checked by import-linter):
``protocol`` (one module per API key) -> ``coordinator`` (groups, offsets) -> ``log`` (the engine).
``__main__`` and ``config`` assemble them.
"""
