"""The log engine: Kafka-format partition logs, retention, consumed retention and the cleaner."""
