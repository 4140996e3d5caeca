"""Staff manage accounts: create one, change its flags and e-mail, set its password or issue a reset link.

Every change is one service function (``user_<action>``), called alike by the console's people pages
(accounts/pages/people.py) and the API (accounts/api/users.py), so an audit log can hook each one.
Deactivating an account or setting its password revokes its API tokens (accounts/signals.py).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.errors import AccountsError
from accounts.people.mail import mail_send
from core.audit import Action, record
from core.errors import fail

User = get_user_model()


def password_check(password: str, *, user=None) -> None:
    """Django's AUTH_PASSWORD_VALIDATORS on ``password``; refused as 400 ``invalid_password`` with their reasons."""
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise fail(AccountsError.INVALID_PASSWORD, reasons=" ".join(exc.messages), on_field="password") from None


def username_check(username: str) -> str:
    """``username`` as Django's user model accepts it, else 400 ``invalid_username``; taken: 409 ``username_taken``."""
    username = User.normalize_username(username.strip())
    try:
        if not username or len(username) > 150:
            raise ValidationError("length")
        User.username_validator(username)
    except ValidationError:
        raise fail(AccountsError.INVALID_USERNAME, on_field="username") from None
    if User.objects.filter(username__iexact=username).exists():
        raise fail(AccountsError.USERNAME_TAKEN, name=username, on_field="username")
    return username


def email_check(email: str) -> str:
    email = email.strip()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise fail(AccountsError.INVALID_EMAIL, on_field="email") from None
    return email


def user_create(*, username: str, password: str | None = None, email: str = "", first_name: str = "",
                last_name: str = "", is_staff: bool = False):
    """A new active account; without ``password`` it has none usable until a reset link or an SSO sign-in sets one."""
    username, email = username_check(username), email_check(email)
    user = User(username=username, email=email, first_name=first_name.strip()[:150],
                last_name=last_name.strip()[:150], is_staff=is_staff)
    if password:
        password_check(password, user=user)
        user.set_password(password)
    else:
        user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # the same name created at the same moment
        raise fail(AccountsError.USERNAME_TAKEN, name=username, on_field="username") from None
    return user


def _guard(*, actor, user, is_active: bool | None, is_staff: bool | None) -> None:
    if user.is_superuser and not actor.is_superuser:
        raise fail(AccountsError.STAFF_REQUIRED, "superuser")
    if user.pk == actor.pk and (is_active is False or is_staff is False):
        raise fail(AccountsError.OWN_ACCOUNT)


def user_update(*, actor, user, is_active: bool | None = None, is_staff: bool | None = None,
                email: str | None = None, first_name: str | None = None, last_name: str | None = None):
    """Change ``user``'s flags and names (None: unchanged); nobody deactivates or un-staffs themselves."""
    _guard(actor=actor, user=user, is_active=is_active, is_staff=is_staff)
    changes = {"is_active": is_active, "is_staff": is_staff, "first_name": first_name, "last_name": last_name,
               "email": None if email is None else email_check(email)}
    changed = [name for name, value in changes.items() if value is not None and getattr(user, name) != value]
    for name in changed:
        value = changes[name]
        setattr(user, name, value.strip()[:150] if isinstance(value, str) and name != "email" else value)
    if changed:
        user.save(update_fields=changed)  # is_active off: the signals revoke the tokens
    return user


def user_set_password(*, actor, user, password: str):
    """Give ``user`` a new password (validated); their API tokens end with the old one."""
    _guard(actor=actor, user=user, is_active=None, is_staff=None)
    password_check(password, user=user)
    user.set_password(password)
    with transaction.atomic():
        user.save(update_fields=["password"])
        record(Action.USER_PASSWORD_SET, actor=actor, obj=user)
    return user


def user_reset_link(*, actor, user, base_url: str, send: bool = False) -> str:
    """A one-time link at which ``user`` sets a new password (Django's password reset token: it stops working once
    the password changes or after PASSWORD_RESET_TIMEOUT); with ``send``, also e-mailed to them."""
    _guard(actor=actor, user=user, is_active=None, is_staff=None)
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})
    url = base_url.rstrip("/") + path
    if send:
        if not user.email:
            raise fail(AccountsError.EMAIL_NOT_CONFIGURED, "no_address")
        mail_send(to=user.email, template="accounts/mail/reset", context={"user": user, "url": url})
    record(Action.USER_RESET_LINK, actor=actor, obj=user, changes={"sent": [None, send]})
    return url
