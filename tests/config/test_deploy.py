"""Issue 12: the deployment files hold together. deploy/compose.yaml parses and has the tiers docs/deploy.md
describes (a migrate job the web and worker services wait for, a healthcheck on every long-running
service); `docker compose config` accepts it where a compose client is installed; the nginx template
renders to a configuration nginx accepts, with a body cap that lets the platform's largest upload through."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_compose_has_every_tier_and_the_migrate_job_runs_first(compose):
    services = compose["services"]
    assert set(services) == {"db", "redis", "migrate", "web", "worker", "nginx"}
    assert services["db"]["image"] == "pgvector/pgvector:pg17"
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert services[name]["deploy"]["replicas"]
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"] and services["migrate"]["restart"] == "no"
    assert all("healthcheck" in services[name] for name in ("db", "redis", "web", "worker", "nginx"))
    # Web and workers share the uploaded originals.
    assert services["web"]["volumes"] == services["worker"]["volumes"] == ["media:/srv/zhiku/media"]


def test_compose_files_it_names_exist(compose):
    mount = compose["services"]["nginx"]["volumes"][0].split(":")[0]
    assert (DEPLOY / mount).is_file()
    assert (ROOT / compose["x-platform"]["build"]["dockerfile"]).is_file()
    assert (ROOT / "deploy" / "healthcheck.py").is_file()
    assert compose["x-platform"]["env_file"] == "${ZHIKU_ENV_FILE:-.env}" and (DEPLOY / ".env.example").is_file()


def test_deploy_env_example_is_production_mode():
    listed = dict(re.findall(r"^([A-Z][A-Z0-9_]+)=(.*)$", (DEPLOY / ".env.example").read_text(encoding="utf-8"), re.M))
    assert listed["ZHIKU_ENV"] == "production"
    assert {"DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "POSTGRES_PASSWORD"} <= set(listed)
    assert listed["DJANGO_SECRET_KEY"] == "" and listed["POSTGRES_PASSWORD"] == ""  # no secret shipped


def compose_client() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.mark.skipif(compose_client() is None, reason="no compose client (docker compose or docker-compose) installed")
def test_docker_compose_config_accepts_the_file():
    env = {**os.environ, "POSTGRES_PASSWORD": "check", "ZHIKU_ENV_FILE": ".env.example"}
    out = subprocess.run([*compose_client(), "-f", str(DEPLOY / "compose.yaml"), "config"], cwd=DEPLOY, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "postgres://zhiku:check@db:5432/zhiku" in out.stdout


NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


@pytest.mark.skipif(NGINX is None, reason="needs nginx: `make test` installs it (scripts/ensure_nginx.sh)")
def test_the_cluster_nginx_config_is_valid_and_lets_the_largest_upload_through(tmp_path, monkeypatch, settings):
    monkeypatch.setenv("ZHIKU_VAR_DIR", str(tmp_path))
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import cluster
    finally:
        sys.path.pop(0)
    layout = cluster.Layout(web=3, workers=1, host="127.0.0.1", port=8000)
    conf = cluster.render_nginx_conf(layout, {})  # runs `nginx -t` on it
    site = (conf.parent / "zhiku.conf").read_text()
    assert re.findall(r"server 127\.0\.0\.1:(\d+)", site) == ["8101", "8102", "8103"]
    cap = int(re.search(r"client_max_body_size (\d+);", site).group(1))
    assert cap > settings.ZHIKU_MAX_UPLOAD_BYTES
    assert "${ZHIKU_" not in site  # every placeholder filled


@pytest.mark.parametrize("args, message", [
    (["start", "--web", "0"], "--web must be between 1 and 99"),
    (["start", "--workers", "0"], "--workers must be between 1 and 64"),
    (["start", "--web", "2", "--port", "8102"], "port 8102 is one of the web processes' ports 8101–8102"),
    (["restart-one", "web-x"], "unknown process 'web-x'"),
    (["restart-one", "web-1"], "no cluster has been started here"),
])
def test_cluster_script_refuses_bad_input_with_a_clear_message(args, message, tmp_path):
    out = subprocess.run([sys.executable, "scripts/cluster.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "ZHIKU_VAR_DIR": str(tmp_path)})
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert not (tmp_path / "cluster" / "pids").exists() or not list((tmp_path / "cluster" / "pids").iterdir())
