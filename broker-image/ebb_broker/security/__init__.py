"""Who may talk to the broker and what they may do: listeners, TLS, SASL, SCRAM credentials, ACLs.

Kafka's security model with Kafka's names (docs/broker.md, "Security"). The protocol layer uses this
package; this package knows nothing of the wire codec, the coordinator or the log engine (import-linter
keeps it so), and the log engine never imports it.
"""
