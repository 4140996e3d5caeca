"""The Git connector's error codes (sources/kinds/git.py), in the one registry (core/errors.py).

``source_auth_failed`` is shared by every kind whose server can refuse credentials: it is registered once, with
the other shared codes, in sources/kinds/service_errors.py.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers source_auth_failed, shared by the kinds

register("git_repository_not_found", ValidationFailed,
         _("The Git repository was not found, or these credentials cannot see it: %(detail)s"))
register("git_branch_not_found", ValidationFailed, _("The branch does not exist in the Git repository: %(detail)s"))
register("git_failed", ValidationFailed, _("Git could not read the repository: %(detail)s"))
register("git_file_too_large", ValidationFailed,
         _("The file is larger than the source's per-file byte limit: %(detail)s"))
