"""kopf handlers, one module per kind."""
