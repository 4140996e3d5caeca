"""The fields of the upload form: chunking, group names and files, each checked before any file is read."""
from __future__ import annotations

from django.conf import settings

from core.api.fields import MAX_GROUP_NAMES
from core.api.inputs import form_text
from core.errors import CoreError, fail
from knowledge.errors import KnowledgeError
from knowledge.ingestion.text import Chunking, chunking_check


def form_int(data, name: str) -> int | None:
    """An optional whole number from a form field ("" or absent: None); anything else is 400 ``invalid_chunking``."""
    raw = data.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    text = raw.strip() if isinstance(raw, str) else ""  # a file part under the field's name is refused too
    if not text or not text.isascii() or not text.isdigit() or len(text) > 9:
        raise fail(KnowledgeError.INVALID_CHUNKING, field=name)
    return int(text)


def form_group_names(data) -> list[str]:
    """The comma-separated ``restricted_to_groups`` of an upload form, at most ``MAX_GROUP_NAMES`` of them."""
    names = [n for n in form_text(data, "restricted_to_groups", max_length=MAX_GROUP_NAMES * 151).split(",") if n.strip()]
    if len(names) > MAX_GROUP_NAMES:
        raise fail(CoreError.INVALID, "group_names", limit=MAX_GROUP_NAMES, on_field="restricted_to_groups")
    return names


def form_files(request, name: str) -> list:
    """The file parts under ``name``; more than ZHIKU_MAX_FILES_PER_UPLOAD is 400 ``too_many_files`` before any is read."""
    files = request.FILES.getlist(name)
    limit = settings.ZHIKU_MAX_FILES_PER_UPLOAD
    if len(files) > limit:
        raise fail(KnowledgeError.TOO_MANY_FILES, limit=limit)
    return files


def chunking_from_form(data) -> Chunking | None:
    """The ``chunk_size`` and ``chunk_overlap`` of a multipart form, checked; None when neither is given."""
    size, overlap = form_int(data, "chunk_size"), form_int(data, "chunk_overlap")
    if size is None and overlap is None:
        return None
    return chunking_check(size=size, overlap=overlap)


# The spellings of a form's boolean, as the schema lists them (``FORM_BOOLEAN``): a form carries text, and clients
# write true in these ways (an HTML checkbox "on", Python's str(True) "True").
_YES, _NO = ("true", "True", "1", "yes", "on"), ("false", "False", "0", "no", "off")
FORM_BOOLEAN = [*_YES, *_NO]


def form_keep_edits(data) -> bool:
    """The upload form's ``keep_edits`` (absent: true): whether a new version keeps edited chunks whose text is gone
    (knowledge/ingestion/pinning.py); anything but one of ``FORM_BOOLEAN`` is 400 ``invalid``."""
    if "keep_edits" not in data:
        return True
    value = data.get("keep_edits")
    if value not in FORM_BOOLEAN:
        raise fail(CoreError.INVALID, on_field="keep_edits")
    return value in _YES
