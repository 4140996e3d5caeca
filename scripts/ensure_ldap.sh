#!/usr/bin/env bash
# Make sure the LDAP pieces are installed: the OpenLDAP client library's headers (python-ldap, which
# django-auth-ldap needs, builds against libldap2-dev and libsasl2-dev when pip finds no wheel) and
# the directory server the LDAP tests start themselves (slapd, slapadd, slaptest; ldap-utils).
# tests/accounts/test_ldap.py skips with the reason when slapd is missing. Nothing is left running:
# the package's own slapd service is not started (the tests run theirs on a loopback port).
set -euo pipefail
have_headers() { [ -f /usr/include/ldap.h ] && [ -f /usr/include/sasl/sasl.h ]; }
have_server() { [ -x /usr/sbin/slapd ] && command -v slapadd >/dev/null 2>&1 && command -v ldapsearch >/dev/null 2>&1; }
if have_headers && have_server; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing slapd, ldap-utils, libldap2-dev and libsasl2-dev from Debian's packages" >&2
  # slapd's post-install asks for a domain and an admin password: the defaults, no questions.
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
      slapd ldap-utils libldap2-dev libsasl2-dev >/dev/null) \
    || echo "could not install the LDAP packages; the LDAP tests will be skipped." >&2
  # Where the package started its own service (a machine without policy-rc.d), stop it: nothing uses it.
  if command -v service >/dev/null 2>&1 && [ ! -x /usr/sbin/policy-rc.d ]; then service slapd stop >/dev/null 2>&1 || true; fi
else
  echo "slapd / the LDAP headers are not installed and apt-get is not usable here; the LDAP tests will be skipped." >&2
fi
exit 0
