"""The sources' service layer: sources (add, edit, remove) and their runs (start, cancel); the runner is sources/run.py."""
