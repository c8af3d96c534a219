"""The `glassrag` command: a thin layer over the Python API."""
