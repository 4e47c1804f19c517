"""0xxx: reading files, parsing them, entry metadata, the engines themselves."""
