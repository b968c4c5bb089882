"""The one module that talks to Kafka-protocol clusters."""
