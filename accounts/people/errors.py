"""The people pages' and API's error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ApplicationError, Conflict, NotFound, PermissionDenied, ValidationFailed, register


class Gone(ApplicationError):
    """A link that existed and can no longer be used: accepted, expired or revoked (RFC 9110 §15.5.11, 410)."""

    status_code = 410
    default_code = "gone"


class MailFailed(ApplicationError):
    """The mail server refused the message or could not be reached (RFC 9110 §15.6.3, 502)."""

    status_code = 502
    default_code = "email_failed"


V, N, P, C = ValidationFailed, NotFound, PermissionDenied, Conflict

# --- users ------------------------------------------------------------------------------------------------------
register("staff_required", P, _("Only staff can manage people."),
         superuser=_("Only a superuser can change a superuser's account."))
register("person_not_found", N, _("User not found."))
register("username_taken", C, _("The username %(name)r is taken."))
register("invalid_username", V, _("A username is 1 to 150 letters, digits and @ . + - _ characters."))
register("invalid_password", V, _("The password is not accepted: %(reasons)s"))
register("invalid_email", V, _("Enter a valid e-mail address."))
register("person_required", V, _("Give exactly one of user_id or username."))
register("own_account", C, _("You cannot deactivate your own account or take away your own staff flag."))
register("email_not_configured", C, _("No e-mail is sent from this site (EMAIL_HOST is not set); give the link yourself."),
         no_address=_("This person has no e-mail address; give the link yourself."))

register("email_failed", MailFailed, _("The e-mail could not be sent: %(error)s"))

# --- groups -----------------------------------------------------------------------------------------------------
register("group_not_found", N, _("Group not found."))
register("group_name_taken", C, _("A group named %(name)r already exists."))
register("invalid_group_name", V, _("A group name is 1 to 150 characters."))
register("group_manager_required", P, _("Only staff and this group's managers can change its members."))
register("sso_group", C, _("This group is kept in step with the directory; change its members there."))

# --- the user picker --------------------------------------------------------------------------------------------
register("search_not_allowed", P, _("Only staff, knowledge base owners and group managers can search people."))
register("invalid_query", V, _("q must be 1 to %(limit)s characters."),
         kind=_("kind must be user, group or all."))

# --- invitations ------------------------------------------------------------------------------------------------
register("gone", Gone, _("This link can no longer be used."))
register("invitation_not_found", N, _("Invitation not found."))
register("invitation_used", Gone, _("This invitation has already been used."))
register("invitation_expired", Gone, _("This invitation has expired."))
register("invitation_revoked", Gone, _("This invitation was withdrawn."))
register("invitation_maker_lost", Gone,
         _("Whoever made this invitation may no longer grant these roles; ask an owner of the knowledge base for a new one."))
register("invalid_invitation", V, _("An invitation gives at most %(limit)s roles, each on a different knowledge base."),
         days=_("expires_in_days must be a whole number of days from 1 to %(limit)s."))
register("invitation_not_allowed", P, _("You can invite people only to knowledge bases you own."))

del V, N, P, C
