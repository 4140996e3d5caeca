#!/usr/bin/env bash
# Make sure nginx is installed for `make cluster` (the proxy in front of the daphne processes) and the tests
# that start one. Installs Debian's nginx when missing (as root); never touches /etc/nginx's sites: the cluster
# runs nginx with its own configuration under var/cluster/ (scripts/cluster.py).
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing nginx from Debian's packages (the cluster's proxy)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null
  # Debian's package starts (and enables) the system-wide nginx on port 80 where it can; this project never
  # uses it, so leave it stopped rather than holding a port nobody asked for.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then systemctl disable --now nginx >/dev/null 2>&1 || true;
  elif [ -f /run/nginx.pid ]; then kill "$(cat /run/nginx.pid)" 2>/dev/null || true; fi
else
  echo "nginx is not installed and apt-get is not usable here: install nginx to run \`make cluster\`;" \
       "the tests that need it will be skipped." >&2
fi
