"""Knowledge bases, documents, chunks, ingestion and retrieval."""
