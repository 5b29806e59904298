"""Settings, read from the environment (and a `.env` file beside manage.py).

Every variable is documented in README.md ("Configuration"). The defaults are the demo's:
SQLite, Celery tasks inline, email to the console. Production sets DEBUG=0 and the secure
defaults below switch on (HTTPS-only cookies, HSTS, SSL redirect), so `check --deploy` is clean.
"""

import ipaddress
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import environ
import plotly
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)

# A missing SECRET_KEY is only tolerated while debugging; production must set its own.
_DEV_SECRET_KEY = "insecure-dev-only-key-do-not-use-in-production-0123456789abcdef"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (see README, Configuration).")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Fernet key(s) for provider credentials. Several keys, comma-separated, allow rotation:
# the first encrypts, all decrypt (cryptography's MultiFernet).
FINOPS_ENCRYPTION_KEYS = env.list("FINOPS_ENCRYPTION_KEY", default=[])

# Outbound HTTP to URLs people type (a cap's webhook): finops/core/egress.py refuses loopback, link-local, private,
# unique-local, multicast, unspecified and reserved addresses unless they are inside one of these networks
# (comma-separated CIDRs, e.g. "10.20.0.0/16,fd00:20::/32": a receiver on the internal network on purpose).
try:
    FINOPS_EGRESS_ALLOWED_NETWORKS = [
        ipaddress.ip_network(item, strict=False)
        for item in env.list("FINOPS_EGRESS_ALLOWED_NETWORKS", default=[])
        if item.strip()
    ]
except ValueError as exc:
    raise ImproperlyConfigured(f"FINOPS_EGRESS_ALLOWED_NETWORKS: {exc} (write CIDRs, e.g. 10.20.0.0/16)") from None
# The demo's stand-in Slack (demo/slack.py): /demo/slack/ records and shows what the platform team's Slack
# channel posts. On only in the demo (`make demo` sets it, with FINOPS_EGRESS_ALLOWED_NETWORKS=127.0.0.1/32).
FINOPS_DEMO_SLACK = env.bool("FINOPS_DEMO_SLACK", default=False)
FINOPS_DEMO_SLACK_LOG = env.str("FINOPS_DEMO_SLACK_LOG", default=str(BASE_DIR / "demo-slack.jsonl"))
# One delivery attempt (connect, send, the whole response) ends within this many seconds, on the wall clock.
FINOPS_EGRESS_DEADLINE_SECONDS = env.float("FINOPS_EGRESS_DEADLINE_SECONDS", default=10.0)

# Every figure shown is converted into this currency with a dated FxRate.
FINOPS_REPORTING_CURRENCY = env.str("FINOPS_REPORTING_CURRENCY", default="USD").upper()
# A spend spike must also be at least this far above the workload's usual day (reporting currency, despite the name).
FINOPS_SPIKE_MIN_USD = Decimal(env.str("FINOPS_SPIKE_MIN_USD", default="50"))
# Presentation only: stored times are UTC.
FINOPS_DISPLAY_TIME_ZONE = env.str("FINOPS_DISPLAY_TIME_ZONE", default="UTC")
# Uploads (ingest/uploads.py): the largest file the page and the API accept, and how long a file is kept after
# its import ended (for re-runs and audit).
FINOPS_MAX_UPLOAD_BYTES = env.int("FINOPS_MAX_UPLOAD_BYTES", default=2 * 1024**3)
# Batches of outcome counts, metrics and eval scores (page and API) are written within the request: at most this
# many bytes and rows each (finops/web/batch_limits.py; docs/security.md, "Size limits").
FINOPS_MAX_BATCH_BYTES = env.int("FINOPS_MAX_BATCH_BYTES", default=5 * 1024**2)
FINOPS_MAX_BATCH_ROWS = env.int("FINOPS_MAX_BATCH_ROWS", default=10_000)
FINOPS_UPLOAD_RETENTION_DAYS = env.int("FINOPS_UPLOAD_RETENTION_DAYS", default=30)
# Raw usage lines older than this many whole months are pruned (rollups stay): docs/operations.md, "Retention".
# 0 keeps every line for ever.
FINOPS_USAGE_RETENTION_MONTHS = env.int("FINOPS_USAGE_RETENTION_MONTHS", default=25)
if FINOPS_USAGE_RETENTION_MONTHS < 0:
    raise ImproperlyConfigured("FINOPS_USAGE_RETENTION_MONTHS must be 0 (keep everything) or a number of months")
# An unsubscribe link in a report email works this many days after it was sent (re-subscribing voids it sooner).
FINOPS_UNSUBSCRIBE_LINK_DAYS = env.int("FINOPS_UNSUBSCRIBE_LINK_DAYS", default=90)
# A run still queued this long after it was created or last attempted lost its task message (a broker restarted
# without persistence): the schedule dispatch queues it again (ingest/schedule.py, runs_lost).
FINOPS_INGEST_REQUEUE_SECONDS = env.int("FINOPS_INGEST_REQUEUE_SECONDS", default=20 * 60)
# /healthz answers 503 when an enabled API account has not synced successfully for this long (finops/web/health.py).
FINOPS_HEALTH_MAX_SYNC_AGE_HOURS = env.int("FINOPS_HEALTH_MAX_SYNC_AGE_HOURS", default=24)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "finops",
    "ingest",
    # Outside the product package (they use it; it never imports them): the demo organisation and the benches.
    "demo",
    "bench",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_permissions_policy.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "finops.web.middleware.DisplayTimeZoneMiddleware",
    "finops.web.middleware.AuditSourceMiddleware",
    # Before any view hook (the CSRF check reads a form's body): a batch or upload over its size is a 413 unread.
    "finops.web.batch_limits.BatchSizeMiddleware",
    "finops.web.middleware.UnreadableQueryMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Pages answer the product's 404 page even with DEBUG on, never Django's technical one (finops/web/not_found.py).
    "finops.web.not_found.NotFoundPageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy (django-csp): scripts only from this server and never inline (the UI is offline-first:
# every script is a static file; chart data travels in JSON <script type="application/json"> blocks, which are not
# run), no framing, no plugins, forms post only here. Inline *styles* stay allowed: Plotly styles the charts it
# draws at run time, and a few bars are sized with a style attribute. The API docs pages relax it in finops/urls.py
# (Redoc runs its search in a blob: worker).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# No page of this product uses a camera, a microphone, the location, payments or USB.
PERMISSIONS_POLICY = {
    "accelerometer": [],
    "camera": [],
    "geolocation": [],
    "gyroscope": [],
    "magnetometer": [],
    "microphone": [],
    "payment": [],
    "usb": [],
    "fullscreen": ["self"],
}

# Logins are throttled per username from one client address (django-axes): after AXES_FAILURE_LIMIT failures that
# pair is locked out for AXES_COOLOFF_MINUTES, a success resets the count, and every failure is logged (never the
# password) by axes' own logger and in its AccessAttempt table (admin).
# finops.web.auth.UserBackend is Django's ModelBackend with the signed-in user read in one plain SELECT (its docstring).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "finops.web.auth.UserBackend"]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
# Keyed on the pair: a wrong password for one user, or from one address, never locks anyone else out (behind the
# documented proxy every address used to be the proxy's, so five failures with any usernames locked out everyone).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "finops.web.proxies.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_SENSITIVE_PARAMETERS = ["password", "password1", "password2", "secret", "token", "api_key"]

ROOT_URLCONF = "finops.urls"
WSGI_APPLICATION = "finops.wsgi.application"

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
                "finops.web.context.navigation",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    options = DATABASES["default"].setdefault("OPTIONS", {})
    if not env.bool("DB_JIT", default=False):
        # Postgres JIT compiles any query its planner prices above jit_above_cost: on a page's rollup aggregates,
        # and on the attribution CASE, compiling took 0.1–2 s for queries that run in tens of milliseconds without it.
        options["options"] = f"{options.get('options', '')} -c jit=off".strip()
    # A page's GROUP BY over a month of rollup rows with a dozen sums outgrows Postgres' default 4 MB: the
    # planner then sorts on disk instead of hashing (the overview's workload × model read: 44 ms against 22 ms
    # at 10M lines). Per sort or hash, per connection; the few web and worker connections can afford it.
    options["options"] = f"{options.get('options', '')} -c work_mem={env.str('DB_WORK_MEM', default='32MB')}".strip()
    # Parallel workers per query (issue 23): none unless DB_PARALLEL_WORKERS says. On the 2-core machines this product
    # is sized for, serving several web workers, a page's rollup read split over 2 workers waited for cores other
    # requests held: the overview's day grid at 10M lines took 100–130 ms in parallel against 70 ms alone (same CPU),
    # and the load bench served more requests at every level without them. Raise it where cores are to spare.
    options["options"] = (
        f"{options.get('options', '')} -c max_parallel_workers_per_gather={env.int('DB_PARALLEL_WORKERS', default=0)}"
    ).strip()
    # What the planner thinks a page read out of order costs against one read in order (issue 23). Postgres' 4 is
    # a spinning disk's; the rollups a page reads are in memory or on SSD. At 4 the planner read a team's 60 days of
    # daily rollup through the day index, filtering out every other team's rows (30k heap pages, 140–270 ms), not
    # through the (team, day) index (1,100 pages, 6–8 ms), because the day index's rows lie in day order.
    options["options"] = (
        f"{options.get('options', '')} -c random_page_cost={env.str('DB_RANDOM_PAGE_COST', default='1.1')}"
    )
else:
    # The demo's SQLite builds the covering indexes (Index(include=...), Postgres' index-only scans) without their
    # extra columns, which is all it needs; the check says so on every command otherwise.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "finops.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# Uploaded export files, read by the Celery worker: a volume shared by web and worker in production.
MEDIA_ROOT = env.path("FINOPS_MEDIA_ROOT", default=BASE_DIR / "media")
MEDIA_URL = "media/"  # never served: uploads are read by the worker only

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Plotly's JS comes from the installed plotly package, never a CDN: the UI works offline.
PLOTLY_JS_DIR = Path(plotly.__file__).parent / "package_data"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", PLOTLY_JS_DIR)]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Celery: with no REDIS_URL, tasks run inline (the demo needs no services) ---
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Workers keep Django's LOGGING (the plain or JSON format and the ingest context fields) instead of Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Redis hands a delivered but unacknowledged task (acks_late) to another worker after this many seconds. A task
# still running then is *not* run twice: every ingest run holds a run lock for as long as it executes (ingest/lease.py,
# run_lock), so the second delivery waits and finds the run done. Longer than any run; the retries' countdowns stay
# below it (ingest/tasks.py, RETRY_BACKOFF_MAX), so a retry waiting for its time is not handed out twice either.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)}
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ROUTES = {
    "ingest.tasks.*": {"queue": "ingest"},
    "finops.tasks.evaluate_alerts": {"queue": "notify"},
    "finops.tasks.deliver_alerts": {"queue": "notify"},
    "finops.tasks.send_reports": {"queue": "notify"},
}
# Each entry expires just under its period, so a backlog never piles up stale copies.
CELERY_BEAT_SCHEDULE = {
    "dispatch-due-syncs": {
        "task": "ingest.tasks.dispatch_due_syncs",
        "schedule": 300.0,
        "options": {"expires": 280},
    },
    # The catch-up evaluation: spend-changed signals raise events at once; this finds what they could not
    # (a forecast crossing as days pass, a source gone silent).
    "evaluate-alerts": {
        "task": "finops.tasks.evaluate_alerts",
        "schedule": 900.0,
        "options": {"expires": 840},
    },
    # Sends retries when they fall due (new events are sent right after the evaluation that raised them).
    "deliver-alerts": {
        "task": "finops.tasks.deliver_alerts",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # The monthly TCO report by email: each subscription on/after its day (UTC), once; failed sends when due.
    "send-reports": {
        "task": "finops.tasks.send_reports",
        "schedule": 3600.0,
        "options": {"expires": 3540},
    },
    # Raw usage lines past their retention, in small batches (ingest/retention.py).
    "prune-usage-lines": {
        "task": "ingest.tasks.prune_usage_lines",
        "schedule": 24 * 3600.0,
        "options": {"expires": 24 * 3600 - 60},
    },
    # Uploaded files past their retention (ingest/uploads.py).
    "prune-uploads": {
        "task": "ingest.tasks.prune_uploads",
        "schedule": 6 * 3600.0,
        "options": {"expires": 6 * 3600 - 60},
    },
}

CACHES = {
    "default": (
        # A Redis that does not answer must fail a call within seconds, not hang a web worker (the API then answers
        # 503 with Retry-After: finops/api/errors.py).
        {
            "BACKEND": "finops.web.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
}
# Pages served from a cache of their HTML, keyed on the data version Postgres moves at every commit and on the viewer
# (finops/web/page_cache.py, docs/performance.md "Page cache"). Its own Redis URL if given (PAGE_CACHE_URL), else the
# app's; without either, each process keeps its own (locmem). Shorter timeouts than the app's: a Redis that hangs
# costs a page at most a second before it is computed as if there were no cache. PAGE_CACHE_SECONDS=0 turns it off.
PAGE_CACHE_URL = env.str("PAGE_CACHE_URL", default=REDIS_URL)
PAGE_CACHE_SECONDS = env.int("PAGE_CACHE_SECONDS", default=600)
CACHES["pages"] = (
    {
        "BACKEND": "finops.web.cache.RedisCache",
        "LOCATION": PAGE_CACHE_URL,
        "KEY_PREFIX": "finops",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
    if PAGE_CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "pages"}
)

# --- Email ---
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="finops@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# An SMTP server that accepts the connection and then hangs must not hold a worker (one event fails, is retried).
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=15)


def served_site_url(argv: list[str]) -> str | None:
    """Where `manage.py runserver [addr:]port` serves, as a URL people open ("http://127.0.0.1:18200"); None for any
    other command. The demo (`make demo PORT=18200`) serves with runserver and sets no SITE_URL: its emails link to
    where it is served, not to port 8000 (issue 24). 0.0.0.0 and :: listen everywhere; a browser opens localhost."""
    if len(argv) < 2 or argv[1] != "runserver":
        return None
    addrport = next((arg for arg in argv[2:] if not arg.startswith("-")), "")
    host, _, port = addrport.rpartition(":") if ":" in addrport else ("", "", addrport)
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "0": "127.0.0.1", "[::]": "[::1]"}.get(host, host)
    if host.count(":") > 1 and not host.startswith("["):
        host = f"[{host}]"  # a bare IPv6 address (runserver -6 ::1:8000)
    return f"http://{host}:{port or 8000}"


# Where people open the dashboard: emails and webhooks link to absolute URLs under it (no trailing slash). Unset in
# development (DEBUG), the address runserver serves at (served_site_url); `load_demo --url` sets it for the load.
SITE_URL = env.str("SITE_URL", default=(DEBUG and served_site_url(sys.argv)) or "http://127.0.0.1:8000").rstrip("/")

# --- REST API ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "finops.api.authentication.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "finops.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "finops.api.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "COERCE_DECIMAL_TO_STRING": True,
    # Per signed-in user and per anonymous client address (behind FINOPS_TRUSTED_PROXIES): a runaway script slows
    # down before the database does. Anonymous calls are counted on their 401s (finops.api.errors).
    "DEFAULT_THROTTLE_CLASSES": ["finops.api.throttling.UserRate", "finops.api.throttling.AnonRate"],
    # Redis down answers a JSON 503 with Retry-After; 401s count against the anonymous rate.
    "EXCEPTION_HANDLER": "finops.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("API_RATE_USER", default="3000/hour"),
        "anon": env.str("API_RATE_ANON", default="120/hour"),
    },
}
# Named so that ApiToken (finops.org.models.tokens) can point at it: knox declares its model swappable.
KNOX_TOKEN_MODEL = "knox.AuthToken"
REST_KNOX = {
    # Tokens are stored as SHA-512 digests; only the prefix is kept in clear to find them.
    "TOKEN_TTL": timedelta(days=env.int("API_TOKEN_TTL_DAYS", default=365)),
    "AUTO_REFRESH": False,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Inference FinOps API",
    "DESCRIPTION": "Spend, usage and configuration of the Inference FinOps dashboard. "
    "Authenticate with `Authorization: Token <token>` (create one with `manage.py create_api_token USER`).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # The API docs load nothing from the internet: Swagger UI and Redoc come from drf-spectacular-sidecar (static
    # files), Swagger UI's validator badge (an image from validator.swagger.io) is off, and Redoc's template is
    # overridden without its Google Fonts (templates/drf_spectacular/redoc.html).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    # One name for the SLA verdict, which the metrics and the scorecard responses both carry.
    "ENUM_NAME_OVERRIDES": {"SlaVerdictEnum": "finops.performance.selectors.performance.VERDICT_STATUSES"},
}

# --- Production hardening: on unless DEBUG, each overridable for a TLS-terminating proxy setup ---
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Container and load-balancer health probes speak plain HTTP on the private network.
SECURE_REDIRECT_EXEMPT = [r"^health/$", r"^healthz$"]
# Django's database sessions, each request's row read with one plain SELECT (finops/web/sessions.py).
SESSION_ENGINE = "finops.web.sessions"
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
# The preload directive only allows the domain's owner to submit it to browsers' lists; set 0 to omit it.
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
# How many reverse proxies stand in front of the app, each appending to X-Forwarded-For: the client address for the
# login lockout and the API's rates is the one the outermost trusted proxy saw (finops/web/proxies.py). 0: no proxy, the
# header is ignored (a client could write anything in it).
FINOPS_TRUSTED_PROXIES = env.int("FINOPS_TRUSTED_PROXIES", default=0)
if FINOPS_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("FINOPS_TRUSTED_PROXIES must be 0 (no proxy) or the number of proxies in front")
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    # Behind a TLS-terminating proxy (docker-compose's web service) that sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# LOG_FORMAT=plain (default) or json (one object per line, for a log collector); every line written during an
# ingest run carries its run id, account and window (finops/core/logs.py; docs/operations.md, "Logging").
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "finops.core.logs.PlainFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(context)s%(message)s",
        },
        "json": {"()": "finops.core.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # axes: its start-up banner and successful-login lines are noise on every command; failures and lockouts are
    # warnings, and stay.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
if CELERY_TASK_ALWAYS_EAGER:
    # Inline tasks (the demo): every import's alert evaluation would log "Task … succeeded" into load_demo's output.
    LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}
    LOGGING["loggers"]["ingest.services"] = {"level": "WARNING"}  # likewise each run's "started" / "succeeded"
