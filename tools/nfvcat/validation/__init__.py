"""Validation: the pipeline (``pipeline``), how engine jobs run (``executor``), the engine server
(``server``, ``client``) and the output formats (``report``)."""
