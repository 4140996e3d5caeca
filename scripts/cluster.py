"""`make cluster`: the production topology as processes on one machine: nginx → N daphne, M Celery workers.

    python scripts/cluster.py start --web 2 --workers 1 [--port 8000]
    python scripts/cluster.py status
    python scripts/cluster.py restart-one web-2       (or worker-1, nginx)
    python scripts/cluster.py stop

``start`` runs migrate and bootstrap once, starts web process i (daphne) on
127.0.0.1:(8100+i), the Celery workers (`celery -A config worker --concurrency 1
-n worker<i>@%h`) and nginx on 127.0.0.1:PORT with a configuration rendered
from deploy/nginx/zhiku.conf.template, and returns once the proxy serves `/`.
Every process runs detached in its own process group, with its pid in
``$ZHIKU_VAR_DIR/cluster/pids/<name>.pid`` and its output in
``$ZHIKU_VAR_DIR/cluster/logs/<name>.log`` (names: web-<i>, worker-<i>, nginx).
All of them get this environment plus REDIS_URL (default
redis://127.0.0.1:6379/0, so ingestion goes to the workers), the proxy's
address as a trusted CSRF origin, and ZHIKU_TRUSTED_PROXIES=1 (nginx appends the
client address to X-Forwarded-For); with DATABASE_URL unset they share the
embedded PostgreSQL, as `make run` does.

The load test (docs/scaling.md) relies on these names, paths and ports.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import string
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil
from serve import listening  # scripts/serve.py: `make run`'s own check that a port listens

ROOT = Path(__file__).resolve().parent.parent
NGINX_TEMPLATE = ROOT / "deploy" / "nginx" / "zhiku.conf.template"
WEB_PORT_BASE = 8100  # web process i listens on 8100 + i
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# The platform's default per-file cap (config/settings.py ZHIKU_MAX_UPLOAD_BYTES); nginx allows one
# more MiB for the multipart framing.
DEFAULT_UPLOAD_BYTES = 50 * 1024 * 1024
START_TIMEOUT = 300.0  # seconds: the first start on a busy two-core machine loads models in every process
STOP_TIMEOUT = 20.0  # seconds of SIGTERM before SIGKILL (a Celery worker finishes its current batch)
# What a live process of each kind has in its command line (a recycled pid is not ours).
KIND_MARK = {"web": "daphne", "worker": "celery", "nginx": "nginx"}


class ClusterError(Exception):
    """A start, stop or restart that cannot go on; its message says what to do."""


def var_dir() -> Path:
    return Path(os.environ.get("ZHIKU_VAR_DIR", ROOT / "var")).resolve()


def cluster_dir() -> Path:
    return var_dir() / "cluster"


@dataclass(frozen=True)
class Member:
    """One process of the cluster: ``web-<i>``, ``worker-<i>`` or ``nginx``."""

    kind: str
    index: int = 0

    @property
    def name(self) -> str:
        return "nginx" if self.kind == "nginx" else f"{self.kind}-{self.index}"

    @property
    def pid_file(self) -> Path:
        return cluster_dir() / "pids" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return cluster_dir() / "logs" / f"{self.name}.log"

    @classmethod
    def parse(cls, name: str) -> Member:
        """``web-2`` → Member("web", 2); a clear error for anything else."""
        if name == "nginx":
            return cls("nginx")
        kind, _, index = name.partition("-")
        if kind not in ("web", "worker") or not index.isdigit() or int(index) < 1:
            raise ClusterError(f"unknown process {name!r}: use web-<i>, worker-<i> or nginx (see `status`)")
        return cls(kind, int(index))


@dataclass
class Layout:
    """What `start` was asked for, kept in cluster.json so status and restart-one know it."""

    web: int
    workers: int
    host: str
    port: int
    web_port_base: int = WEB_PORT_BASE

    def web_port(self, member: Member) -> int:
        return self.web_port_base + member.index

    @property
    def members(self) -> list[Member]:
        return ([Member("web", i) for i in range(1, self.web + 1)]
                + [Member("worker", i) for i in range(1, self.workers + 1)] + [Member("nginx")])

    def save(self) -> None:
        (cluster_dir() / "cluster.json").write_text(json.dumps(self.__dict__) + "\n")

    @classmethod
    def load(cls) -> Layout | None:
        path = cluster_dir() / "cluster.json"
        return cls(**json.loads(path.read_text())) if path.exists() else None


# --- processes -------------------------------------------------------------------------------

def read_pid(member: Member) -> int | None:
    try:
        return int(member.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def alive(member: Member, pid: int | None = None) -> bool:
    """Whether ``member``'s process runs: the pid exists, is not a zombie, and is a process of that kind."""
    pid = pid if pid is not None else read_pid(member)
    if pid is None:
        return False
    try:
        process = psutil.Process(pid)
        return (process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
                and KIND_MARK[member.kind] in " ".join(process.cmdline()))
    except psutil.Error:
        return False


def cluster_env(layout: Layout) -> dict[str, str]:
    """The environment of every process of the cluster (and of migrate and bootstrap)."""
    env = dict(os.environ)
    env.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    origins = [f"http://{h}:{layout.port}" for h in dict.fromkeys([layout.host, "127.0.0.1", "localhost"])]
    env.setdefault("DJANGO_CSRF_TRUSTED_ORIGINS", ",".join(origins))
    env.setdefault("ZHIKU_TRUSTED_PROXIES", "1")
    env["ZHIKU_VAR_DIR"] = str(var_dir())
    env["PYTHONUNBUFFERED"] = "1"
    return env


def command(member: Member, layout: Layout) -> list[str]:
    if member.kind == "web":
        return [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(layout.web_port(member)), "config.asgi:application"]
    if member.kind == "worker":
        return [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency", "1",
                "-n", f"worker{member.index}@%h", "-l", "info"]
    conf = cluster_dir() / "nginx" / "nginx.conf"
    return [nginx_binary(), "-p", str(conf.parent), "-c", str(conf), "-g", "daemon off;"]


def spawn(member: Member, layout: Layout, env: dict[str, str]) -> subprocess.Popen:
    """Start ``member`` detached (its own session and process group), output appended to its log."""
    member.log_file.parent.mkdir(parents=True, exist_ok=True)
    member.pid_file.parent.mkdir(parents=True, exist_ok=True)
    with open(member.log_file, "ab") as log:  # the child keeps its own copy of the descriptor
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {member.name}\n".encode())
        log.flush()
        proc = subprocess.Popen(command(member, layout), cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    member.pid_file.write_text(f"{proc.pid}\n")
    return proc


def signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the process and its children (Celery's pool, nginx's workers)
    except ProcessLookupError:
        pass


def stop_members(members: list[Member], *, quiet: bool = False) -> None:
    """SIGTERM each live member's process group, SIGKILL what is left after STOP_TIMEOUT; remove the pid files."""
    running = {m: pid for m in members if (pid := read_pid(m)) is not None and alive(m, pid)}
    for pid in running.values():
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while any(alive(m, pid) for m, pid in running.items()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for member, pid in running.items():
        # The whole group, even when its leader is gone: a Celery pool child may outlive its parent.
        signal_group(pid, signal.SIGKILL)
        if not quiet:
            print(f"stopped {member.name} (pid {pid})")
    # A SIGKILL is delivered, not waited for: return once every member is gone (a loaded machine takes a moment).
    deadline = time.monotonic() + 10
    while any(alive(m, pid) for m, pid in running.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    for member in members:
        member.pid_file.unlink(missing_ok=True)


# --- nginx -------------------------------------------------------------------------------------

def nginx_binary() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    if found is None:
        raise ClusterError("nginx is not installed: run `bash scripts/ensure_nginx.sh` (as root: apt-get install nginx)")
    return found


def render_nginx_conf(layout: Layout, env: dict[str, str]) -> Path:
    """var/cluster/nginx/nginx.conf: a main configuration of its own (pid, logs, temp files under
    var/cluster) around deploy/nginx/zhiku.conf.template; /etc/nginx is never read or changed."""
    home = cluster_dir() / "nginx"
    for folder in (home, cluster_dir() / "pids", cluster_dir() / "logs"):
        folder.mkdir(parents=True, exist_ok=True)
    upload_cap = int(env.get("ZHIKU_MAX_UPLOAD_BYTES") or DEFAULT_UPLOAD_BYTES)
    servers = "\n    ".join(f"server 127.0.0.1:{layout.web_port(m)} max_fails=1 fail_timeout=10s;"
                            for m in layout.members if m.kind == "web")
    site = string.Template(NGINX_TEMPLATE.read_text()).safe_substitute(
        ZHIKU_UPSTREAM_SERVERS=servers, ZHIKU_LISTEN=f"{layout.host}:{layout.port}",
        ZHIKU_CLIENT_MAX_BODY_SIZE=str(upload_cap + 1024 * 1024), ZHIKU_FORWARDED_PROTO="$scheme",
    )
    (home / "zhiku.conf").write_text(site)
    logs = cluster_dir() / "logs"
    root_user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read var/ and write the temp files
    (home / "nginx.conf").write_text(
        "# Generated by scripts/cluster.py; regenerated on every start.\n"
        f"{root_user}worker_processes 1;\n"
        f"pid {cluster_dir() / 'pids' / 'nginx.pid'};\n"
        "error_log stderr warn;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        f"    access_log {logs / 'nginx-access.log'};\n"
        f"    client_body_temp_path {home / 'client_body'};\n"
        f"    proxy_temp_path {home / 'proxy'};\n"
        f"    fastcgi_temp_path {home / 'fastcgi'};\n"
        f"    uwsgi_temp_path {home / 'uwsgi'};\n"
        f"    scgi_temp_path {home / 'scgi'};\n"
        f"    include {home / 'zhiku.conf'};\n"
        "}\n"
    )
    check = subprocess.run([nginx_binary(), "-t", "-p", str(home), "-c", str(home / "nginx.conf")],
                           capture_output=True, text=True)
    if check.returncode != 0:
        raise ClusterError(f"nginx refuses the generated configuration {home / 'nginx.conf'}:\n{check.stderr}")
    return home / "nginx.conf"


# --- waiting -----------------------------------------------------------------------------------

def serves(url: str) -> bool:
    """Whether ``url`` answers with a page (redirects followed): not an error from the proxy or the platform."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status < 400
    except OSError:
        return False


def log_tail(member: Member, lines: int = 30) -> str:
    try:
        return "\n".join(member.log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def up(member: Member, layout: Layout) -> bool:
    """Whether ``member`` is ready: a web process listens on its port, nginx serves `/`, a worker once it runs."""
    if member.kind == "web":
        return listening("127.0.0.1", layout.web_port(member))
    if member.kind == "nginx":
        return serves(f"http://{layout.host}:{layout.port}/")
    return True


def wait_until_up(procs: dict[Member, subprocess.Popen], layout: Layout, timeout: float = START_TIMEOUT) -> None:
    """Every process of ``procs`` is ``up``; a process that exits meanwhile is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for member, proc in procs.items():
            if proc.poll() is not None:
                raise ClusterError(f"{member.name} exited with status {proc.returncode}; the end of "
                                   f"{member.log_file}:\n{log_tail(member)}")
        if all(up(member, layout) for member in procs):
            return
        time.sleep(0.2)
    late = [member for member in procs if not up(member, layout)] or list(procs)
    raise ClusterError(f"{', '.join(m.name for m in late)} did not come up within {timeout:.0f} s; the end of "
                       f"{late[0].log_file}:\n{log_tail(late[0])}")


def run_once(args: list[str], env: dict[str, str], what: str) -> None:
    """A one-off step (migrate, bootstrap) in the foreground; its output shown, a failure is an error."""
    print(f"== {what}", flush=True)
    if subprocess.run(args, cwd=ROOT, env=env).returncode != 0:
        raise ClusterError(f"{what} failed (see above)")


def check_redis(env: dict[str, str]) -> None:
    """Redis must answer: the local one is started by scripts/ensure_redis.sh, another one is the user's."""
    import redis

    url = env["REDIS_URL"]
    parts = urlsplit(url)

    def ping() -> bool:
        try:
            return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
        except (redis.RedisError, ValueError):  # ValueError: not a redis:// URL
            return False

    if not ping() and parts.hostname in ("127.0.0.1", "localhost"):
        subprocess.run(["bash", str(ROOT / "scripts" / "ensure_redis.sh")], check=False,
                       env={**env, "REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(parts.port or 6379)})
    if not ping():
        raise ClusterError(f"Redis does not answer at {url}: start it (bash scripts/ensure_redis.sh) or set REDIS_URL")


# --- commands ----------------------------------------------------------------------------------

def start(layout: Layout, *, bootstrap: bool = True) -> None:
    if not 1 <= layout.web <= 99:
        raise ClusterError("--web must be between 1 and 99 (web i listens on 8100+i)")
    if not 1 <= layout.workers <= 64:
        raise ClusterError("--workers must be between 1 and 64 (uploads wait for a worker)")
    first, last = layout.web_port_base + 1, layout.web_port_base + layout.web
    if first <= layout.port <= last:
        raise ClusterError(f"port {layout.port} is one of the web processes' ports {first}–{last}; choose another")
    running = [m.name for m in known_members() if alive(m)]
    if running:
        raise ClusterError(f"a cluster is already running ({', '.join(running)}): `make stop` "
                           "(or python scripts/cluster.py stop) first")
    busy = [p for p in [layout.port, *range(first, last + 1)] if listening("127.0.0.1", p)]
    if busy:
        raise ClusterError(f"port(s) {', '.join(map(str, busy))} in use: stop what runs there, or choose --port")
    nginx_binary()
    env = cluster_env(layout)
    check_redis(env)
    for sub in ("pids", "logs"):
        (cluster_dir() / sub).mkdir(parents=True, exist_ok=True)
    for stale in (cluster_dir() / "pids").glob("*.pid"):
        stale.unlink()
    layout.save()
    render_nginx_conf(layout, env)

    procs: dict[Member, subprocess.Popen] = {}
    try:
        run_once([sys.executable, "scripts/compile_messages.py"], env, "message catalogues")
        run_once([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
        # Workers and web processes load while bootstrap runs; bootstrap ingests nothing itself: it sends
        # the demo KB's tasks to the broker and the workers ingest them while the cluster serves.
        for member in layout.members:
            if member.kind != "nginx":
                procs[member] = spawn(member, layout, env)
        if bootstrap:
            run_once([sys.executable, "manage.py", "bootstrap", "--url", f"http://{layout.host}:{layout.port}"], env,
                     "bootstrap (admin account, demo KB)")
        procs[Member("nginx")] = spawn(Member("nginx"), layout, env)
        wait_until_up(procs, layout)
    except BaseException:
        stop_members(list(procs), quiet=True)
        raise
    base = f"http://{layout.host}:{layout.port}"
    print(f"\n知库 zhiku 集群已启动 / cluster is up: {base}/   web ×{layout.web} (127.0.0.1:{first}–{last}), "
          f"workers ×{layout.workers}, nginx   logs: {cluster_dir() / 'logs'}/   停止 / stop: make stop\n", flush=True)


def known_members() -> list[Member]:
    """Every member with a pid file, and every member of the last layout."""
    names = {p.stem for p in (cluster_dir() / "pids").glob("*.pid")}
    layout = Layout.load()
    members = {Member.parse(n) for n in names if n == "nginx" or "-" in n}
    if layout is not None:
        members |= set(layout.members)
    return sorted(members, key=lambda m: ({"nginx": 0, "web": 1, "worker": 2}[m.kind], m.index))


def stop(*, quiet: bool = False) -> None:
    members = known_members()
    if not any(alive(m) for m in members):
        if not quiet:
            print("no cluster is running")
        for member in members:
            member.pid_file.unlink(missing_ok=True)
        return
    stop_members(members)


def status() -> int:
    """Print each process and whether it runs; 0 when all of them do."""
    layout = Layout.load()
    members = known_members()
    if not members:
        print("no cluster has been started here")
        return 1
    all_alive = True
    for member in members:
        pid = read_pid(member)
        up = alive(member, pid)
        all_alive &= up
        where = (f"127.0.0.1:{layout.web_port(member)}" if member.kind == "web" and layout
                 else f"{layout.host}:{layout.port}" if member.kind == "nginx" and layout else "")
        print(f"{member.name:<10} pid {pid if pid else '-':<8} {'alive' if up else 'DEAD':<6} {where}")
    return 0 if all_alive else 1


def restart_one(name: str) -> None:
    """Stop ``name`` if it still runs, start it again (same port), and wait until it serves."""
    member = Member.parse(name)
    layout = Layout.load()
    if layout is None:
        raise ClusterError("no cluster has been started here: `make cluster` first")
    if member not in layout.members:
        raise ClusterError(f"{name} is not part of this cluster (web 1–{layout.web}, worker 1–{layout.workers}, nginx)")
    stop_members([member], quiet=True)
    env = cluster_env(layout)
    if member.kind == "nginx":
        render_nginx_conf(layout, env)
    proc = spawn(member, layout, env)
    wait_until_up({member: proc}, layout)
    print(f"restarted {name} (pid {proc.pid})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_start = sub.add_parser("start", help="migrate, bootstrap, start N web, M workers and nginx; return once it serves")
    p_start.add_argument("--web", type=int, default=2, help="daphne processes (default 2)")
    p_start.add_argument("--workers", type=int, default=1, help="Celery workers, concurrency 1 each (default 1)")
    p_start.add_argument("--host", default="127.0.0.1", help="the proxy's address (default 127.0.0.1)")
    p_start.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000), help="the proxy's port (default 8000)")
    p_start.add_argument("--web-port-base", type=int, default=WEB_PORT_BASE,
                         help="web i listens on this + i (default 8100: 8101, 8102, …)")
    p_start.add_argument("--no-bootstrap", action="store_true", help="skip `manage.py bootstrap` (admin account, demo KB)")
    p_stop = sub.add_parser("stop", help="stop every process of the cluster")
    p_stop.add_argument("--quiet", action="store_true", help="say nothing when no cluster runs (make stop)")
    sub.add_parser("status", help="each process, its pid and whether it is alive")
    p_restart = sub.add_parser("restart-one", help="start one process again on its port (after it died or was killed)")
    p_restart.add_argument("name", help="web-<i>, worker-<i> or nginx")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            start(Layout(web=args.web, workers=args.workers, host=args.host, port=args.port, web_port_base=args.web_port_base),
                  bootstrap=not args.no_bootstrap)
        elif args.command == "stop":
            stop(quiet=args.quiet)
        elif args.command == "status":
            return status()
        else:
            restart_one(args.name)
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
