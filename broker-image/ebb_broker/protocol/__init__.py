"""The Kafka wire protocol: the server and one module per API key."""
