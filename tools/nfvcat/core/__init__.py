"""The core: reading with positions, findings, errors, paths, processes and the plugin groups; it imports
nothing else of nfvcat."""
