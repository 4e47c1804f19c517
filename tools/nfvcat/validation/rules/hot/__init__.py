"""1xxx: Heat Orchestration Templates."""
