"""Sign-in's, API tokens' and the people pages' error codes, registered in the one registry (core/errors.py) when the app loads."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core.errors import ApplicationError, Conflict, ErrorCode, NotFound, PermissionDenied, ValidationFailed, register


class AccountsError(ErrorCode):
    """Sign-in's, API tokens', people's, groups' and invitations' codes."""

    INVALID_CREDENTIALS = "invalid_credentials"
    TOKEN_NOT_FOUND = "token_not_found"
    INVALID_EXPIRY = "invalid_expiry"
    STAFF_REQUIRED = "staff_required"
    PERSON_NOT_FOUND = "person_not_found"
    USERNAME_TAKEN = "username_taken"
    INVALID_USERNAME = "invalid_username"
    INVALID_PASSWORD = "invalid_password"
    INVALID_EMAIL = "invalid_email"
    PERSON_REQUIRED = "person_required"
    OWN_ACCOUNT = "own_account"
    EMAIL_NOT_CONFIGURED = "email_not_configured"
    EMAIL_FAILED = "email_failed"
    GROUP_NOT_FOUND = "group_not_found"
    GROUP_NAME_TAKEN = "group_name_taken"
    INVALID_GROUP_NAME = "invalid_group_name"
    GROUP_MANAGER_REQUIRED = "group_manager_required"
    SSO_GROUP = "sso_group"
    SEARCH_NOT_ALLOWED = "search_not_allowed"
    INVALID_QUERY = "invalid_query"
    GONE = "gone"
    INVITATION_NOT_FOUND = "invitation_not_found"
    INVITATION_USED = "invitation_used"
    INVITATION_EXPIRED = "invitation_expired"
    INVITATION_REVOKED = "invitation_revoked"
    INVITATION_MAKER_LOST = "invitation_maker_lost"
    INVALID_INVITATION = "invalid_invitation"
    INVITATION_NOT_ALLOWED = "invitation_not_allowed"


class Gone(ApplicationError):
    """A link that existed and can no longer be used: accepted, expired or revoked (RFC 9110 §15.5.11, 410)."""

    status_code = 410
    default_code = "gone"


class MailFailed(ApplicationError):
    """The mail server refused the message or could not be reached (RFC 9110 §15.6.3, 502)."""

    status_code = 502
    default_code = "email_failed"


V, N, P, C = ValidationFailed, NotFound, PermissionDenied, Conflict

# --- sign-in and API tokens ---------------------------------------------------------------------------------------
register(AccountsError.INVALID_CREDENTIALS, V, _("Unable to log in with the given username and password."))
register(AccountsError.TOKEN_NOT_FOUND, N, _("API token not found."))
register(AccountsError.INVALID_EXPIRY, V, _("expires_in_days must be a whole number of days from 1 to %(limit)s."),
         never=_("Tokens must expire on this site: give expires_in_days from 1 to %(limit)s."),
         unlimited=_("expires_in_days must be a whole number of days of at least 1, or null (never expires)."))

# --- users ------------------------------------------------------------------------------------------------------
register(AccountsError.STAFF_REQUIRED, P, _("Only staff can manage people."),
         superuser=_("Only a superuser can change a superuser's account."))
register(AccountsError.PERSON_NOT_FOUND, N, _("User not found."))
register(AccountsError.USERNAME_TAKEN, C, _("The username %(name)r is taken."))
register(AccountsError.INVALID_USERNAME, V, _("A username is 1 to 150 letters, digits and @ . + - _ characters."))
register(AccountsError.INVALID_PASSWORD, V, _("The password is not accepted: %(reasons)s"))
register(AccountsError.INVALID_EMAIL, V, _("Enter a valid e-mail address."))
register(AccountsError.PERSON_REQUIRED, V, _("Give exactly one of user_id or username."))
register(AccountsError.OWN_ACCOUNT, C, _("You cannot deactivate your own account or take away your own staff flag."))
register(AccountsError.EMAIL_NOT_CONFIGURED, C, _("No e-mail is sent from this site (EMAIL_HOST is not set); give the link yourself."),
         no_address=_("This person has no e-mail address; give the link yourself."))

register(AccountsError.EMAIL_FAILED, MailFailed, _("The e-mail could not be sent: %(error)s"))

# --- groups -----------------------------------------------------------------------------------------------------
register(AccountsError.GROUP_NOT_FOUND, N, _("Group not found."))
register(AccountsError.GROUP_NAME_TAKEN, C, _("A group named %(name)r already exists."))
register(AccountsError.INVALID_GROUP_NAME, V, _("A group name is 1 to 150 characters."))
register(AccountsError.GROUP_MANAGER_REQUIRED, P, _("Only staff and this group's managers can change its members."))
register(AccountsError.SSO_GROUP, C, _("This group is kept in step with the directory; change its members there."))

# --- the user picker --------------------------------------------------------------------------------------------
register(AccountsError.SEARCH_NOT_ALLOWED, P, _("Only staff, knowledge base owners and group managers can search people."))
register(AccountsError.INVALID_QUERY, V, _("q must be 1 to %(limit)s characters."),
         kind=_("kind must be user, group or all."))

# --- invitations ------------------------------------------------------------------------------------------------
register(AccountsError.GONE, Gone, _("This link can no longer be used."))
register(AccountsError.INVITATION_NOT_FOUND, N, _("Invitation not found."))
register(AccountsError.INVITATION_USED, Gone, _("This invitation has already been used."))
register(AccountsError.INVITATION_EXPIRED, Gone, _("This invitation has expired."))
register(AccountsError.INVITATION_REVOKED, Gone, _("This invitation was withdrawn."))
register(AccountsError.INVITATION_MAKER_LOST, Gone,
         _("Whoever made this invitation may no longer grant these roles; ask an owner of the knowledge base for a new one."))
register(AccountsError.INVALID_INVITATION, V, _("An invitation gives at most %(limit)s roles, each on a different knowledge base."),
         days=_("expires_in_days must be a whole number of days from 1 to %(limit)s."))
register(AccountsError.INVITATION_NOT_ALLOWED, P, _("You can invite people only to knowledge bases you own."))

del V, N, P, C
