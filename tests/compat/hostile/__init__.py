"""A generative hostile client: requests built from kafka-python's schemas of every API ebb-broker
advertises, sent over real sockets by a Hypothesis state machine that checks the broker's invariants
after each one (docs/broker.md, "Hostile clients")."""
