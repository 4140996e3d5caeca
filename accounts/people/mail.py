"""Sending the people pages' e-mail (invitations, reset links) with Django's mail and its EMAIL_* settings."""
from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string

from accounts.errors import AccountsError
from core.errors import fail


def mail_send(*, to: str, template: str, context: dict) -> None:
    """Send ``template`` (``<template>_subject.txt`` and ``<template>.txt``) to ``to`` in the active language;
    409 ``email_not_configured`` where the site sends no e-mail (ZHIKU_EMAIL_ENABLED)."""
    if not settings.ZHIKU_EMAIL_ENABLED:
        raise fail(AccountsError.EMAIL_NOT_CONFIGURED)
    subject = " ".join(render_to_string(f"{template}_subject.txt", context).split())
    body = render_to_string(f"{template}.txt", context)
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to], fail_silently=False)
    except (OSError, smtplib.SMTPException) as exc:  # smtplib's errors, refused connections, timeouts
        raise fail(AccountsError.EMAIL_FAILED, error=str(exc)[:200]) from None
