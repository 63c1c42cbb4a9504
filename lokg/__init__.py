"""LOKG."""
