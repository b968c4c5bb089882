"""Pydantic models of the CRDs: the single source of the generated CRD YAML."""
