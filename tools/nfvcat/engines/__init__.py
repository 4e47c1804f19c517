"""Engines: the field's own validation code, each run in a worker process of its own.

Heat and Nova cannot share a process (oslo.config registers ``host`` twice), so every engine runs as
``python -m nfvcat.engines.<name>``: it reads a JSON list of jobs on stdin and writes a JSON list of
results on stdout, one per job, each ``{"findings": [...], "deps": {...}}``.
"""
