"""Chunking: parsed blocks to retrieval-sized chunks with section paths and enriched text.

Stages, one module each: ``chunker`` walks the document's blocks by section, ``sentences`` cuts text into
sentences, ``packing`` packs them into chunks; ``drafts`` holds what comes out.
"""
from knowledge.chunking.chunker import chunk_document
from knowledge.chunking.drafts import ChunkDraft, ChunkingConfig, enriched_text
from knowledge.chunking.packing import caption_of
from knowledge.chunking.sentences import split_sentences

__all__ = ["ChunkDraft", "ChunkingConfig", "caption_of", "chunk_document", "enriched_text", "split_sentences"]
