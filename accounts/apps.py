"""App config for accounts: API tokens, single sign-on, people, groups and invitations."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        # The app's error codes join the one registry (core/errors.py).
        from accounts import (
            errors,  # noqa: F401 - registers the app's error codes
            signals,  # noqa: F401 - connects the receivers
        )
