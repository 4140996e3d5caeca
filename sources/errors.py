"""The sources' error codes, registered in the one registry (core/errors.py) when the app loads.

Each kind registers its own codes in ``sources/kinds/<kind>_errors.py`` (so the connectors can be written
side by side without editing one file); every such module present is imported here. A connector raises
``SourceError(code, message)``: the registered message is what a reader sees in their language, the
connector's own message (English, with the URL or path) travels as ``detail``.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from django.utils.translation import gettext_lazy as _

from core.errors import Conflict, ErrorCode, NotFound, ValidationFailed, register


class SourcesError(ErrorCode):
    """The sources' codes: the connector protocol's, sources' and runs'."""

    SOURCE_KIND_UNKNOWN = "source_kind_unknown"
    SOURCE_SETTINGS_INVALID = "source_settings_invalid"
    SOURCE_URL_INVALID = "source_url_invalid"
    SOURCE_ADDRESS_REFUSED = "source_address_refused"
    SOURCE_UNREACHABLE = "source_unreachable"
    SOURCE_NOT_FOUND = "source_not_found"
    SOURCE_RUN_NOT_FOUND = "source_run_not_found"
    SOURCE_INVALID = "source_invalid"
    SOURCE_RUN_ACTIVE = "source_run_active"
    SOURCE_RUN_FINISHED = "source_run_finished"
    SOURCE_NAME_TAKEN = "source_name_taken"
    SOURCE_ITEM_FAILED = "source_item_failed"
    SOURCE_FAILED = "source_failed"
    SOURCE_RUN_STALLED = "source_run_stalled"
    SOURCE_CREDENTIALS_UNREADABLE = "source_credentials_unreadable"


# --- the protocol's own codes (sources/kinds/base.py, core/net/netguard.py) --------------------------------
# ``%(detail)s`` is the connector's own sentence (the field, the address); core.errors.failure_text fills it.
register(SourcesError.SOURCE_KIND_UNKNOWN, ValidationFailed, _("Unknown kind of source: %(detail)s"))
register(SourcesError.SOURCE_SETTINGS_INVALID, ValidationFailed, _("The source's settings are not valid: %(detail)s"))
register(SourcesError.SOURCE_URL_INVALID, ValidationFailed, _("The source's address is not valid: %(detail)s"))
register(SourcesError.SOURCE_ADDRESS_REFUSED, ValidationFailed,
         _("The source's address is on a private network, which this server may not reach: %(detail)s. "
           "If the documents really live on the intranet, ask the administrator to set "
           "ZHIKU_SOURCES_ALLOW_PRIVATE=true."))
register(SourcesError.SOURCE_UNREACHABLE, ValidationFailed, _("The source could not be reached: %(detail)s"))

# --- sources and their runs (sources/services, sources/run.py) -------------------------------------------------
register(SourcesError.SOURCE_NOT_FOUND, NotFound, _("Source not found."))
register(SourcesError.SOURCE_RUN_NOT_FOUND, NotFound, _("Source run not found."))
register(SourcesError.SOURCE_INVALID, ValidationFailed, _("A source needs a name and a kind."),
         name=_("name must be a non-empty text of at most %(limit)s characters."),
         name_taken=_("This knowledge base already has a source named %(name)r."),
         schedule=_("schedule is manual, hourly, daily or cron."),
         cron=_("cron must be a cron expression of five fields, e.g. \"0 3 * * *\"."),
         settings=_("settings must be a JSON object."),
         credentials=_("credentials must be an object of text values, naming only %(names)s."),
         paused=_("paused must be true or false."),
         keep_documents=_("keep_documents must be true or false."))
register(SourcesError.SOURCE_RUN_ACTIVE, Conflict, _("This source is already running; wait for the run to end or cancel it."))
register(SourcesError.SOURCE_RUN_FINISHED, Conflict, _("This run has already ended."))
register(SourcesError.SOURCE_NAME_TAKEN, Conflict,
         _("A document with this name already exists in the knowledge base and does not belong to this source."))
register(SourcesError.SOURCE_ITEM_FAILED, ValidationFailed, _("This item could not be read: %(detail)s"))
register(SourcesError.SOURCE_FAILED, ValidationFailed, _("The source could not be read: %(detail)s"))
register(SourcesError.SOURCE_RUN_STALLED, ValidationFailed,
         _("The run stopped without finishing (its worker died or was killed)."))
register(SourcesError.SOURCE_CREDENTIALS_UNREADABLE, ValidationFailed,
         _("The source's stored credentials cannot be decrypted (the secrets key changed); enter them again."))


def _import_kind_errors() -> list[str]:
    """Import every ``sources/kinds/*_errors.py`` (each registers its kind's codes); their module names."""
    names = sorted(p.stem for p in (Path(__file__).parent / "kinds").glob("*_errors.py"))
    for name in names:
        importlib.import_module(f"sources.kinds.{name}")
    return names


KIND_ERROR_MODULES = _import_kind_errors()
