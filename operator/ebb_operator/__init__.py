"""ebb-operator: CRDs for consumer-aware retention, reconciled against any Kafka-protocol cluster.

``models`` (pydantic, the source of the CRDs) <- ``handlers`` (kopf) -> ``kafka`` (the one place that
talks to clusters). The analysis job in ``analysis`` is started as a process, never imported by handlers.
"""
