# Partial stubs for kafka-python 3 (it ships no type information): only `kafka.errors`, whose error
# classes the broker uses for Kafka's error codes. Every other module of the package stays untyped (Any).
from typing import Any

def __getattr__(name: str) -> Any: ...
