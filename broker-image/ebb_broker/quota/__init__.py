"""Kafka client quotas (KIP-13, KIP-55, KIP-546): the stored quota configs, the rates they bound, and the
throttle time a client over its quota is given (KIP-219). Knows no wire: the protocol layer asks it."""
