"""The Feishu connector's error codes (sources/kinds/feishu.py), registered in the one registry (core/errors.py).

``sources/errors.py`` imports every ``sources/kinds/*_errors.py``; the Chinese is in
``sources/locale/zh_Hans/LC_MESSAGES/feishu.po.part``. The codes shared by the service connectors live in
``sources/kinds/service_errors.py``, imported here so either kind's module registers them.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import CODES, ErrorCode, ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers the shared codes


class FeishuError(ErrorCode):
    """The Feishu connector's codes."""

    FEISHU_SPACE_UNAVAILABLE = "feishu_space_unavailable"
    FEISHU_FOLDER_UNAVAILABLE = "feishu_folder_unavailable"
    FEISHU_API_ERROR = "feishu_api_error"


FEISHU_CODES = {
    FeishuError.FEISHU_SPACE_UNAVAILABLE: _("The Feishu wiki space was not found, or the app is not a member of it: "
                                  "add the app to the space (space settings → members) and run again."),
    FeishuError.FEISHU_FOLDER_UNAVAILABLE: _("The Feishu Drive folder was not found, or it is not shared with the app: share "
                                   "the folder with the app (or a group the app is in) and run again."),
    FeishuError.FEISHU_API_ERROR: _("Feishu answered with an error: %(detail)s"),
}

for _code, _message in FEISHU_CODES.items():
    if _code not in CODES:   # imported once by sources/errors.py, perhaps again by a test
        register(_code, ValidationFailed, _message)
