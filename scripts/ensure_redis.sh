#!/usr/bin/env bash
# Make sure a Redis server answers at REDIS_TEST_URL's host (default 127.0.0.1:6379) for the Redis-path tests.
set -euo pipefail
HOST=${REDIS_HOST:-127.0.0.1}
PORT=${REDIS_PORT:-6379}
ping() { (exec 3<>/dev/tcp/$HOST/$PORT && printf 'PING\r\n' >&3 && timeout 2 head -c 5 <&3 | grep -q PONG) 2>/dev/null; }
if ping; then exit 0; fi
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing redis-server from Debian's packages" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "Redis is not running at $HOST:$PORT and redis-server is not installed; the Redis tests will be skipped." >&2
    exit 0
  fi
fi
redis-server --bind "$HOST" --port "$PORT" --save "" --appendonly no --daemonize yes >/dev/null
for _ in $(seq 1 50); do ping && exit 0; sleep 0.1; done
echo "redis-server did not start" >&2
exit 1
