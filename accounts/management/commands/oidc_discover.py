"""``manage.py oidc_discover <issuer>``: the ZHIKU_OIDC_* endpoint lines of a provider, from its discovery document."""
from __future__ import annotations

import requests
from django.core.management.base import BaseCommand, CommandError

# Discovery document field → the variable zhiku reads it from (accounts/sso/config.py).
FIELDS = {"issuer": "ZHIKU_OIDC_ISSUER", "authorization_endpoint": "ZHIKU_OIDC_AUTHORIZATION_ENDPOINT",
          "token_endpoint": "ZHIKU_OIDC_TOKEN_ENDPOINT", "userinfo_endpoint": "ZHIKU_OIDC_USERINFO_ENDPOINT",
          "jwks_uri": "ZHIKU_OIDC_JWKS_URI"}


class Command(BaseCommand):
    help = "Print the ZHIKU_OIDC_* lines for an OpenID provider, read from <issuer>/.well-known/openid-configuration."

    def add_arguments(self, parser):
        parser.add_argument("issuer", help="the provider's issuer URL, e.g. https://id.example.com/realms/corp")

    def handle(self, *args, issuer: str, **options):
        url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=10)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise CommandError(f"could not read {url}: {exc}") from None
        missing = [f for f in FIELDS if not isinstance(document.get(f), str)]
        if missing:
            raise CommandError(f"{url} has no {', '.join(missing)}.")
        if "S256" not in document.get("code_challenge_methods_supported", ["S256"]):
            self.stderr.write("warning: the provider does not list PKCE's S256 method; zhiku's sign-in will use it.")
        for field, variable in FIELDS.items():
            self.stdout.write(f"{variable}={document[field]}")
