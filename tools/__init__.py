"""Developer tools that generate checked-in files from the code (run by make targets)."""
