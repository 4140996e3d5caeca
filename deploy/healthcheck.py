"""Container healthcheck of a web process: daphne answers an HTTP request with something other than a 5xx.

It asks for the sign-in page under the first allowed host name, as the proxy would (HTTPS as the TLS
proxy says), so a healthy process answers 200 and the log carries no DisallowedHost noise.
Exit status 0: healthy; 1: not.
"""
from __future__ import annotations

import http.client
import os
import sys


def main() -> int:
    first = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost").split(",")[0].strip().lstrip(".*")
    try:
        connection = http.client.HTTPConnection("127.0.0.1", int(os.environ.get("PORT", "8000")), timeout=5)
        connection.request("GET", "/accounts/login/", headers={"Host": first or "localhost", "X-Forwarded-Proto": "https"})
        return 0 if connection.getresponse().status < 500 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
