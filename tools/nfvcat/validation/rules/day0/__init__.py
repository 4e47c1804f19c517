"""6xxx: day-0 user data (cloud-config and the hooks that render it)."""
