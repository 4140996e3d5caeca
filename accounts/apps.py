"""App config for accounts: the API tokens (hashed, expiring, revoked with the credentials they came from)."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        from accounts import signals  # noqa: F401 - connects the receivers
