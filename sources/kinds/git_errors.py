"""The Git connector's error codes (sources/kinds/git.py), in the one registry (core/errors.py).

``source_auth_failed`` is shared by every kind whose server can refuse credentials: it is registered once, with
the other shared codes, in sources/kinds/service_errors.py.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ErrorCode, ValidationFailed, register
from sources.kinds import service_errors  # noqa: F401 - registers source_auth_failed, shared by the kinds


class GitError(ErrorCode):
    """The Git connector's codes."""

    GIT_REPOSITORY_NOT_FOUND = "git_repository_not_found"
    GIT_BRANCH_NOT_FOUND = "git_branch_not_found"
    GIT_FAILED = "git_failed"
    GIT_FILE_TOO_LARGE = "git_file_too_large"


register(GitError.GIT_REPOSITORY_NOT_FOUND, ValidationFailed,
         _("The Git repository was not found, or these credentials cannot see it: %(detail)s"))
register(GitError.GIT_BRANCH_NOT_FOUND, ValidationFailed, _("The branch does not exist in the Git repository: %(detail)s"))
register(GitError.GIT_FAILED, ValidationFailed, _("Git could not read the repository: %(detail)s"))
register(GitError.GIT_FILE_TOO_LARGE, ValidationFailed,
         _("The file is larger than the source's per-file byte limit: %(detail)s"))
