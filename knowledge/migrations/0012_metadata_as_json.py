"""Metadata written as Python reprs before it was stored as JSON: turn those strings back into data.

Up to this release, nested metadata (an XLSX file's ``columns`` per sheet, a FAQ row's extra ``fields``,
an e-mail's ``failed_attachments``) was stored as ``str(value)``, e.g. ``"{'常见问题': ['问题', '答案']}"``.
Only strings that read back as a dict or a list of plain values are changed; anything else is left alone.
"""
import ast

from django.db import migrations

_KEYS = ("columns", "fields", "failed_attachments", "sheets")


def _restored(value):
    if isinstance(value, str) and value[:1] in "{[" and value[-1:] in "}]":
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
        return parsed if isinstance(parsed, (dict, list)) else value
    if isinstance(value, list):
        return [_restored(item) for item in value]
    return value


def restore(apps, schema_editor):
    for model_name in ("Document", "Chunk"):
        model = apps.get_model("knowledge", model_name)
        for key in _KEYS:
            rows = model.objects.filter(**{f"metadata__{key}__isnull": False}).only("id", "metadata")
            changed = []
            for row in rows.iterator(chunk_size=1000):
                value = row.metadata.get(key)
                fixed = _restored(value)
                if fixed != value:
                    row.metadata = {**row.metadata, key: fixed}
                    changed.append(row)
            model.objects.bulk_update(changed, ["metadata"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0011_document_chunking"),
    ]

    operations = [
        migrations.RunPython(restore, migrations.RunPython.noop),
    ]
