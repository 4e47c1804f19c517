"""2xxx: flavors and their EPA extra specs."""
