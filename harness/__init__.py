"""Launchers of real components for the test tiers (ebb-broker, Apache Kafka, control plane)."""
