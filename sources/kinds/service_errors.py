"""Codes shared by the connectors (Feishu, Yuque; Git and S3 share ``source_auth_failed``), registered here once.

Each kind's codes module imports this one, so the shared codes exist whichever kind is imported first.
The Chinese is in ``sources/locale/zh_Hans/LC_MESSAGES/feishu.po.part``.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ErrorCode, ValidationFailed, register


class ServiceError(ErrorCode):
    """The codes the service connectors share."""

    SOURCE_AUTH_FAILED = "source_auth_failed"
    SOURCE_RATE_LIMITED = "source_rate_limited"
    SOURCE_ITEM_FORBIDDEN = "source_item_forbidden"
    SOURCE_ITEM_TOO_LARGE = "source_item_too_large"
    SOURCE_BAD_ANSWER = "source_bad_answer"


SERVICE_CODES = {
    ServiceError.SOURCE_AUTH_FAILED: _("The source refused the credentials: check the token or key and save them again."),
    ServiceError.SOURCE_RATE_LIMITED: _("The service kept answering 'too many requests'; the run stopped and will try again "
                             "at its next time."),
    ServiceError.SOURCE_ITEM_FORBIDDEN: _("The app or token may not read this document; share it with the app, or check "
                               "its permissions."),
    ServiceError.SOURCE_ITEM_TOO_LARGE: _("The document is larger than the source's per-item byte limit."),
    ServiceError.SOURCE_BAD_ANSWER: _("The service answered something that is not its API's JSON: %(detail)s"),
}

for _code, _message in SERVICE_CODES.items():
    register(_code, ValidationFailed, _message)
