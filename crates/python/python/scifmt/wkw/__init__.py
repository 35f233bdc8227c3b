"""A drop-in for the ``wkw`` package (work in progress)."""
