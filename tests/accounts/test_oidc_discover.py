"""``manage.py oidc_discover`` against a real OpenID provider (npm's oidc-provider, tests/accounts/oidc.py)."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.accounts.oidc import provider_running


def test_prints_the_endpoint_lines_the_settings_read(tmp_path):
    with provider_running(tmp_path, redirect_uris=["http://127.0.0.1:1/accounts/sso/callback/"], users={}) as provider:
        out = StringIO()
        call_command("oidc_discover", provider.issuer, stdout=out)
        lines = dict(line.split("=", 1) for line in out.getvalue().splitlines())
        expected = provider.env("unused")
        assert lines == {k: v for k, v in expected.items() if k in lines} and len(lines) == 5
        assert lines["ZHIKU_OIDC_ISSUER"] == provider.issuer


def test_an_unreachable_provider_is_a_command_error():
    with pytest.raises(CommandError, match="could not read"):
        call_command("oidc_discover", "http://127.0.0.1:1")
