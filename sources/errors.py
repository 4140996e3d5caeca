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

from core.errors import Conflict, NotFound, ValidationFailed, register

# --- the protocol's own codes (sources/kinds/base.py, core/net/netguard.py) --------------------------------
# ``%(detail)s`` is the connector's own sentence (the field, the address); sources/services/errors.py fills it.
register("source_kind_unknown", ValidationFailed, _("Unknown kind of source: %(detail)s"))
register("source_settings_invalid", ValidationFailed, _("The source's settings are not valid: %(detail)s"))
register("source_url_invalid", ValidationFailed, _("The source's address is not valid: %(detail)s"))
register("source_address_refused", ValidationFailed,
         _("The source's address is on a private network, which this server may not reach: %(detail)s. "
           "If the documents really live on the intranet, ask the administrator to set "
           "ZHIKU_SOURCES_ALLOW_PRIVATE=true."))
register("source_unreachable", ValidationFailed, _("The source could not be reached: %(detail)s"))

# --- sources and their runs (sources/services, sources/run.py) -------------------------------------------------
register("source_not_found", NotFound, _("Source not found."))
register("source_run_not_found", NotFound, _("Source run not found."))
register("source_invalid", ValidationFailed, _("A source needs a name and a kind."),
         name=_("name must be a non-empty text of at most %(limit)s characters."),
         name_taken=_("This knowledge base already has a source named %(name)r."),
         schedule=_("schedule is manual, hourly, daily or cron."),
         cron=_("cron must be a cron expression of five fields, e.g. \"0 3 * * *\"."),
         settings=_("settings must be a JSON object."),
         credentials=_("credentials must be an object of text values, naming only %(names)s."),
         paused=_("paused must be true or false."),
         keep_documents=_("keep_documents must be true or false."))
register("source_run_active", Conflict, _("This source is already running; wait for the run to end or cancel it."))
register("source_run_finished", Conflict, _("This run has already ended."))
register("source_name_taken", Conflict,
         _("A document with this name already exists in the knowledge base and does not belong to this source."))
register("source_item_failed", ValidationFailed, _("This item could not be read: %(detail)s"))
register("source_failed", ValidationFailed, _("The source could not be read: %(detail)s"))
register("source_run_stalled", ValidationFailed,
         _("The run stopped without finishing (its worker died or was killed)."))
register("source_credentials_unreadable", ValidationFailed,
         _("The source's stored credentials cannot be decrypted (the secrets key changed); enter them again."))


def _import_kind_errors() -> list[str]:
    """Import every ``sources/kinds/*_errors.py`` (each registers its kind's codes); their module names."""
    names = sorted(p.stem for p in (Path(__file__).parent / "kinds").glob("*_errors.py"))
    for name in names:
        importlib.import_module(f"sources.kinds.{name}")
    return names


KIND_ERROR_MODULES = _import_kind_errors()
