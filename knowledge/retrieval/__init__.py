"""Retrieval core: analysis, BM25, fusion and the pipeline, in plain Python with no Django imports."""
