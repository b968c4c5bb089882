# kafka-python's error classes: one per Kafka error code (`errno`), generated from Kafka's protocol.

class KafkaError(RuntimeError):
    retriable: bool
    invalid_metadata: bool

class BrokerResponseError(KafkaError):
    errno: int
    message: str
    description: str

def for_code(error_code: int) -> type[BrokerResponseError]: ...
def __getattr__(name: str) -> type[BrokerResponseError]: ...
