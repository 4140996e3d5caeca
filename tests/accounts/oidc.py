"""A real OpenID provider for the SSO tests: npm's oidc-provider on a free loopback port (tests/accounts/oidc_provider.mjs).

oidc-provider is installed with npm into var/test-oidc-provider/ (git-ignored; kept between runs) the
first time a test needs it. Skips with the reason when Node.js or npm is missing or the install fails.
"""
from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
INSTALL_DIR = ROOT / "var" / "test-oidc-provider"
PACKAGE = "oidc-provider@9.13.3"
MODULE = INSTALL_DIR / "node_modules" / "oidc-provider" / "lib" / "index.js"
CLIENT_ID = "zhiku-console"
CLIENT_SECRET = "zhiku-test-client-secret-0123456789abcdef"


@dataclass
class OpenIdProvider:
    issuer: str
    users_file: Path

    def discovery(self) -> dict:
        import requests

        return requests.get(self.issuer + "/.well-known/openid-configuration", timeout=10).json()

    def env(self, redirect_url: str) -> dict[str, str]:
        """The ZHIKU_OIDC_* variables of a zhiku configured for this provider."""
        found = self.discovery()
        return {"ZHIKU_OIDC_CLIENT_ID": CLIENT_ID, "ZHIKU_OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "ZHIKU_OIDC_ISSUER": found["issuer"], "ZHIKU_OIDC_AUTHORIZATION_ENDPOINT": found["authorization_endpoint"],
                "ZHIKU_OIDC_TOKEN_ENDPOINT": found["token_endpoint"], "ZHIKU_OIDC_USERINFO_ENDPOINT": found["userinfo_endpoint"],
                "ZHIKU_OIDC_JWKS_URI": found["jwks_uri"], "ZHIKU_OIDC_REDIRECT_URL": redirect_url,
                # oidc-provider releases the groups claim for the scope of that name (oidc_provider.mjs).
                "ZHIKU_OIDC_SCOPES": "openid email profile groups"}

    def users_set(self, users: dict) -> None:
        self.users_file.write_text(json.dumps(users, ensure_ascii=False), encoding="utf-8")


def provider_installed() -> Path:
    """oidc-provider's entry module, installed with npm once (a lock keeps parallel test processes to one install)."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("Node.js and npm are needed to run the test OpenID provider (npm's oidc-provider)")
    INSTALL_DIR.mkdir(parents=True, exist_ok=True)
    with open(INSTALL_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not MODULE.exists():
            done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(INSTALL_DIR), PACKAGE],
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0 or not MODULE.exists():
                pytest.skip(f"npm could not install {PACKAGE}: {done.stderr[-500:]}")
    return MODULE


@contextmanager
def provider_running(folder: Path, *, redirect_uris: list[str], users: dict):
    """Start the provider for one client with ``redirect_uris``; yields an OpenIdProvider."""
    module = provider_installed()
    users_file = folder / "provider-users.json"
    users_file.write_text(json.dumps(users, ensure_ascii=False), encoding="utf-8")
    config = folder / "provider.json"
    config.write_text(json.dumps({"module": str(module), "port": 0, "users_file": str(users_file), "client": {
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": redirect_uris}}))
    log = folder / "provider.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["node", str(SCRIPT), str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        issuer = None
        for _ in range(300):
            text = log.read_text(errors="replace")
            if "listening " in text:
                issuer = text.split("listening ", 1)[1].split()[0]
                break
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        if issuer is None:
            pytest.fail("the test OpenID provider did not start:\n" + log.read_text(errors="replace"))
        yield OpenIdProvider(issuer=issuer, users_file=users_file)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
