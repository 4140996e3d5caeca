"""Documents' history (knowledge/version_models.py, docs/ingestion.md "Versions")."""
from __future__ import annotations

from core.env import env_int

# Versions of a document whose files are kept (the current one included), so they can be restored; an older
# version's file is deleted when a newer one is folded in (its row stays, restore answers 409 version_file_pruned).
ZHIKU_DOCUMENT_VERSIONS_KEPT = max(1, env_int("ZHIKU_DOCUMENT_VERSIONS_KEPT", 10))
