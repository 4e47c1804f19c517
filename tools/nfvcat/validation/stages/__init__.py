"""The stages of a validation, each a function (or a small class) with an explicit input and output:

    read (read.py: the paths to check, and every document as this run reads it)
    -> context (context.py: the rules' Context: site, catalog flavors and networks, -e/-P parameters)
    -> rules (rules.py: the in-process rules of a document, and of the templates it nests)
    -> engine jobs (jobs.py: each engine's jobs for a document, overlays, cached results)
    -> run (run.py: the jobs not cached, on the executor: one-shot workers or the engine server's)
    -> locate (locate.py: key paths to file:line:col)
    -> suppress (nfvcat.validation.suppress) -> report (nfvcat.validation.model.Report)

``nfvcat.validation.pipeline`` composes them for a call; the command, the engine server and the language
server all validate through it. A stage returns what it found to its caller and never calls back up."""
