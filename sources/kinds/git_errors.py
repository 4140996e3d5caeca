"""The Git connector's error codes (sources/kinds/git.py), in the one registry (knowledge/errors.py).

``source_auth_failed`` is shared by the kinds whose server can refuse credentials (Git, S3): it is registered
here once, and the S3 codes module imports this one.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from knowledge.errors import CODES, ValidationFailed, register

if "source_auth_failed" not in CODES:   # another kind's codes module may have registered the shared code first
    register("source_auth_failed", ValidationFailed,
             _("The source refused the credentials (check the token or key and save them again): %(detail)s"))

register("git_repository_not_found", ValidationFailed,
         _("The Git repository was not found, or these credentials cannot see it: %(detail)s"))
register("git_branch_not_found", ValidationFailed, _("The branch does not exist in the Git repository: %(detail)s"))
register("git_failed", ValidationFailed, _("Git could not read the repository: %(detail)s"))
register("git_file_too_large", ValidationFailed,
         _("The file is larger than the source's per-file byte limit: %(detail)s"))
