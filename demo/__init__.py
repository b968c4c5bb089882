"""Demonstrations run by `make demo`."""
