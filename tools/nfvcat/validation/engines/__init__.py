"""Engines: the field's own validation code, each run in a worker process of its own.

Heat and Nova cannot share a process (oslo.config registers ``host`` twice), so every engine runs as
``python -m nfvcat.validation.engines.<name>``: it reads requests of jobs on stdin, one JSON line each, and answers
each with a line of results, one per job, each ``{"findings": [...], "deps": {...}}`` (see worker.py).
Each engine module also plans its own jobs for a document (``jobs(doc, ctx)``, see jobs.py).
"""
