"""The Yuque connector's error codes (sources/kinds/yuque.py), registered in the one registry (core/errors.py).

``sources/errors.py`` imports every ``sources/kinds/*_errors.py``; the Chinese is in
``sources/locale/zh_Hans/LC_MESSAGES/yuque.po.part``. The codes shared by the service connectors live in
``sources/kinds/service_errors.py``, imported here so either kind's module registers them.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import CODES, ErrorCode, ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers the shared codes


class YuqueError(ErrorCode):
    """The Yuque connector's codes."""

    YUQUE_REPO_NOT_FOUND = "yuque_repo_not_found"
    YUQUE_API_ERROR = "yuque_api_error"


YUQUE_CODES = {
    YuqueError.YUQUE_REPO_NOT_FOUND: _("The Yuque knowledge base was not found, or this token cannot see it: "
                              "check the namespace (group/book) and the token's owner."),
    YuqueError.YUQUE_API_ERROR: _("Yuque answered with an error: %(detail)s"),
}

for _code, _message in YUQUE_CODES.items():
    if _code not in CODES:   # imported once by sources/errors.py, perhaps again by a test
        register(_code, ValidationFailed, _message)
