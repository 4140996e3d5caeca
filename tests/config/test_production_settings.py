"""ZHIKU_ENV=production: explicit settings or a clear refusal, HTTPS everywhere, `check --deploy` clean;
and .env.example lists every setting the code reads from the environment."""
from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROD = {
    "ZHIKU_ENV": "production",
    # Nothing listens on port 1: `check --deploy` must not need the database.
    "DATABASE_URL": "postgres://zhiku:pw@127.0.0.1:1/zhiku",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(60),
    "DJANGO_ALLOWED_HOSTS": "kb.example.com",
}


def manage(tmp_path, *args, **env):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "ZHIKU_", "DATABASE_URL", "REDIS_URL", "PYTEST", "SECURE_"))}
    base["ZHIKU_VAR_DIR"] = str(tmp_path / "var")
    base.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base,
                          capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_in_production(tmp_path):
    result = manage(tmp_path, "check", "--deploy", **PROD)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output
    assert "WARNING" not in output.upper()
    # Production never starts the embedded database.
    assert not (tmp_path / "var" / "pgdata").exists()


def test_check_deploy_is_clean_behind_a_tls_proxy(tmp_path):
    result = manage(tmp_path, "check", "--deploy", **PROD, ZHIKU_BEHIND_TLS_PROXY="1")
    assert result.returncode == 0 and "no issues (0 silenced)" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("missing", [("DATABASE_URL",), ("DJANGO_SECRET_KEY",), ("DJANGO_ALLOWED_HOSTS",),
                                     ("DATABASE_URL", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS")])
def test_production_refuses_to_start_without_its_settings(tmp_path, missing):
    env = {k: v for k, v in PROD.items() if k not in missing}
    result = manage(tmp_path, "check", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    line = next(text for text in result.stderr.splitlines() if "ZHIKU_ENV=production requires" in text)
    for name in missing:
        assert name in line
    for name in set(PROD) - set(missing) - {"ZHIKU_ENV"}:
        assert name not in line.split("requires", 1)[1].split("to be set")[0]
    assert not (tmp_path / "var" / "pgdata").exists()


def test_production_refuses_debug_and_unknown_modes(tmp_path):
    result = manage(tmp_path, "check", **PROD, DJANGO_DEBUG="1")
    assert result.returncode != 0 and "DJANGO_DEBUG" in result.stderr
    result = manage(tmp_path, "check", **{**PROD, "ZHIKU_ENV": "prod"})
    assert result.returncode != 0 and "ZHIKU_ENV must be" in result.stderr


@pytest.mark.parametrize("hosts", ["*", "kb.example.com,*", " * "])
def test_production_refuses_any_host(tmp_path, hosts):
    """With "*" every Host is the site's own, so every origin would pass the CSRF and websocket origin checks."""
    result = manage(tmp_path, "check", **{**PROD, "DJANGO_ALLOWED_HOSTS": hosts})
    assert result.returncode != 0
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("django.core.exceptions.ImproperlyConfigured") and "DJANGO_ALLOWED_HOSTS" in line and "'*'" in line
    # Local mode keeps allowing it (a laptop on a private network).
    assert manage(tmp_path, "check", DJANGO_ALLOWED_HOSTS="*", DATABASE_URL=PROD["DATABASE_URL"],
                  DJANGO_SECRET_KEY=PROD["DJANGO_SECRET_KEY"]).returncode == 0


SHOW = ("from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER, s.CSRF_TRUSTED_ORIGINS, s.LOCAL_MODE)")


def test_production_settings_values(tmp_path):
    result = manage(tmp_path, "shell", "-c", SHOW, **PROD)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False True True True 31536000 None ['https://kb.example.com'] False"
    result = manage(tmp_path, "shell", "-c", SHOW, **PROD, ZHIKU_BEHIND_TLS_PROXY="1")
    assert "('HTTP_X_FORWARDED_PROTO', 'https')" in result.stdout


def test_behind_a_tls_proxy_https_is_served_and_http_redirected(client, settings, db):
    """What ZHIKU_BEHIND_TLS_PROXY=1 sets up: the proxy's X-Forwarded-Proto decides, the redirect keeps working."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    response = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert "max-age=31536000" in response["Strict-Transport-Security"]
    response = client.get("/accounts/login/?next=/chat/", HTTP_X_FORWARDED_PROTO="http")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/accounts/login/?next=/chat/"


def _names_read_from_environment() -> set[str]:
    pattern = re.compile(r"""(?:os\.environ\.get|os\.getenv|os\.environ\[|env_bool|env_int)\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
    names: set[str] = set()
    for folder in ("config", "knowledge", "chat", "accounts", "assistants"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(pattern.findall(path.read_text(encoding="utf-8")))
    return names - {"DJANGO_SETTINGS_MODULE", "XDG_RUNTIME_DIR"}


def test_env_example_lists_every_setting():
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(encoding="utf-8"), re.M))
    read = _names_read_from_environment()
    assert {"DATABASE_URL", "ZHIKU_ENV", "ZHIKU_TRUSTED_PROXIES", "ZHIKU_BEHIND_TLS_PROXY"} <= read
    assert read - listed == set(), f"missing from .env.example: {sorted(read - listed)}"
