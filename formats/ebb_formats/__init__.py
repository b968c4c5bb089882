"""Kafka's formats, shared by the broker and the operator: what both read or write byte for byte.

The broker and the operator never import each other; both import this package, and it imports neither
(nor any Kafka client library), so a format has one codec on both sides of that line:

- `varint`: Kafka's variable-length integers (zig-zag varints of record batches, unsigned varints of the
  flexible protocol versions) and the compact strings and tagged fields built on them.
- `record_batch`: the v2 record batch's header layout and its control records.
- `consumer_offsets`: the keys and values the group coordinator writes to `__consumer_offsets`, every
  version Kafka has written, and the group-to-partition mapping.
- `consumer_protocol`: the topics of a consumer's subscription (the members' metadata in a classic group).
- `offset_fetch`: the OffsetFetch v8 answer (KIP-709, many groups): the broker writes it, the operator
  decodes it into per-topic columns.
"""
