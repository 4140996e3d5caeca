"""Services: every write to knowledge bases, documents and chunks goes through these functions."""
