"""Ingestion, stage by stage: ``upload`` (intake, checks, preview) → ``run`` (parse → chunk → tokens → vectors →
commit → keyword index), with ``text`` (chunking choices, keyword text), ``vectors`` (embedding, reuse) and
``recovery`` (claims, heartbeats, the sweeper). See docs/architecture.md."""
