"""Stored files of documents."""
from __future__ import annotations

from functools import partial

from django.db import transaction
from django.db.models.fields.files import FieldFile


def delete_after_commit(file: FieldFile) -> None:
    """Delete the stored file once the current transaction commits (a rollback keeps it); nothing without a name."""
    if file.name:
        transaction.on_commit(partial(file.storage.delete, file.name))
