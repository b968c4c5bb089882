"""Kafka message definitions kafka-python 3.0.12 does not ship, in Kafka's own message-definition JSON, from
which kafka-python generates the codec (`ApiMessage` subclasses with `load_json=` this package).

- DescribeShareGroupOffsets (API key 90, version 0, KIP-932): each share group's share-partition start
  offset, below which every record is acknowledged (or archived). Kafka 4.x serves it.
"""
