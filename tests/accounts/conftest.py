"""Fixtures of the sign-in tests: single sign-on settings applied from environment variables, as a server reads them."""
from __future__ import annotations

import importlib

import pytest


@pytest.fixture
def sso_env(settings, monkeypatch):
    """``apply(**env)``: set the variables, re-read accounts/sso/config.py and put its settings in force."""
    import accounts.sso.config as config

    def apply(**env: str):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        module = importlib.reload(config)
        for name in dir(module):
            if name.isupper():
                setattr(settings, name, getattr(module, name))
        settings.AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", *module.SSO_AUTHENTICATION_BACKENDS]
        return module

    yield apply
    monkeypatch.undo()
    importlib.reload(config)
