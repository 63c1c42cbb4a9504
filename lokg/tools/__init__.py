"""Command-line tools over lokg's files (``python -m lokg.tools.<tool>``)."""
