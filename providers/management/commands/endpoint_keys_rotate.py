"""Re-encrypt every stored endpoint key under the first key of the ring: `manage.py endpoint_keys_rotate` (docs/llm.md)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from providers.models import ModelEndpoint
from providers.secrets import InvalidToken, secret_rotate


class Command(BaseCommand):
    help = ("Re-encrypt the API keys of the console's model endpoints under the first key of ZHIKU_SECRETS_KEY "
            "(else SECRET_KEY); run after adding a new key in front, before removing the old one.")

    def handle(self, *args, **opts):
        rotated, unreadable = 0, []
        with transaction.atomic():
            for endpoint in ModelEndpoint.objects.select_for_update().exclude(api_key_encrypted=""):
                try:
                    endpoint.api_key_encrypted = secret_rotate(endpoint.api_key_encrypted)
                except InvalidToken:
                    unreadable.append(endpoint.name)
                    continue
                endpoint.save(update_fields=["api_key_encrypted"])
                rotated += 1
        self.stdout.write(f"{rotated} key(s) re-encrypted.")
        if unreadable:
            raise CommandError("No key of the ring opens the stored key of: " + ", ".join(unreadable)
                               + " (enter those keys again in the console).")
