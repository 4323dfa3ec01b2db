"""Command-line entry points (``idc-build``, ``idc-demo``, ``idc-eval``)."""
