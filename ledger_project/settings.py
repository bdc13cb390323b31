"""Settings for the tokenized asset ledger service.

One settings file, read from the environment (django-environ). Every default is the
embedded mode: SQLite under ``var/``, a filesystem Celery broker, the local SVM node on
127.0.0.1:8899. Production sets ``DATABASE_URL`` (PostgreSQL), ``REDIS_URL`` and the
cluster URLs; see docs/configuration.md.
"""

from __future__ import annotations

import base64
import os
import secrets
import tempfile
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

VAR_DIR = Path(env("LEDGER_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# Prometheus multiprocess mode (docs/operations.md, "Metrics"): every process of this
# instance writes its counters under var/metrics; set before anything imports
# prometheus_client, which reads the variable once.
from ledger_project.metrics.multiproc import directory_setup as _metrics_directory_setup  # noqa: E402

PROMETHEUS_MULTIPROC_DIR = _metrics_directory_setup(VAR_DIR)

# Embedded development mode (LEDGER_EMBEDDED=1: `make run`, scripts/run_embedded.py, the
# test harness) may make up missing secrets on first use; any other start must be given
# them, so a production process never invents a key next to its database and loses it.
LEDGER_EMBEDDED = env.bool("LEDGER_EMBEDDED", default=False)


def _secret_from_file(path: Path, setting: str, nbytes: int = 32) -> str:
    """Read a generated secret; only embedded mode creates it (mode 0600) on first use."""
    if not path.exists():
        if not LEDGER_EMBEDDED:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(f"{setting} is not set and {path} does not exist; set {setting} (docs/configuration.md). "
                                       "Only the embedded development mode (LEDGER_EMBEDDED=1) generates it.")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def _create_private_file(path: Path, content: str) -> None:
    """Write a 0600 file that must not exist yet: written aside, then linked into place, so
    two processes starting at once never see half a file or replace the other's key (the
    second one's link fails and it uses the first one's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


SECRET_KEY = env("DJANGO_SECRET_KEY", default=None) or _secret_from_file(VAR_DIR / "django_secret_key", "DJANGO_SECRET_KEY")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
# The client's address: X-Forwarded-For is read only from these proxies (CIDRs; none by default): ledger_project/client_address.py.
from ledger_project.client_address import trusted_proxies_setting as _trusted_proxies  # noqa: E402
LEDGER_TRUSTED_PROXIES = _trusted_proxies(env.list("LEDGER_TRUSTED_PROXIES", default=[]))

INSTALLED_APPS = [
    # django.contrib.admin, with the back office's site as admin.site (docs/admin.md)
    "backoffice.apps.LedgerAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # The project's apps (docs/architecture.md has which stands on which).
    "tenancy", "custody", "accounts", "instruments", "positions", "loans", "marketdata", "transactions", "webhooks", "lookup_tables", "vaults",
    "django_celery_beat",
    "django_celery_results",
    # Staff sign-in lockout (backoffice/lockout.py holds its settings' meaning).
    "axes",
    # Last: its post_migrate syncs the staff roles over every app's permissions.
    "backoffice.apps.BackofficeConfig",
]

MIDDLEWARE = [
    # Outermost: requests by route and status, and their latency (docs/operations.md, "Metrics").
    "ledger_project.metrics.middleware.MetricsMiddleware",
    "ledger_project.middleware.RequestIdMiddleware",
    # Request limits and the x-request-id rule, before authentication (docs/api.md).
    "ledger_project.middleware.ApiRequestGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a sign-in that reached the lockout into the sign-in page's answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "ledger_project.urls"
WSGI_APPLICATION = "ledger_project.wsgi.application"

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

# --- Database -------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'ledger.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server, the worker and the node's readers work side by side;
    # IMMEDIATE takes the write lock at BEGIN so two writers queue instead of deadlocking,
    # and ledger_project.sqlite makes them queue in turn (a file lock before BEGIN) rather
    # than retry on SQLite's busy handler (docs/performance.md, "SQLite's one writer").
    DATABASES["default"]["ENGINE"] = "ledger_project.sqlite"
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    )
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    # Off by default: the check is a round trip before every request. Without it, a
    # connection broken by a database restart fails one request per process (503, safe to
    # retry with the same x-request-id) and is then replaced (docs/configuration.md).
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", env.bool("DATABASE_CONN_HEALTH_CHECKS", default=False))
    # Server-side parameters let psycopg prepare statements it sees repeatedly: the hot
    # lookups then skip PostgreSQL's planner (2 ms of a 4 ms request, measured).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options.setdefault("server_side_binding", env.bool("DATABASE_SERVER_SIDE_BINDING", default=True))
    _options.setdefault("prepare_threshold", env.int("DATABASE_PREPARE_THRESHOLD", default=5))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, broker --------------------------------------------------------------------
REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": env("LEDGER_CACHE_PREFIX", default="ledger")}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ledger"}}

CELERY_BROKER_URL = REDIS_URL or "filesystem://"
if not REDIS_URL:
    CELERY_BROKER_TRANSPORT = "ledger_project.broker:Transport"  # atomic writes (broker.py)
    # Embedded broker: kombu's filesystem transport, a queue folder under var/ shared by
    # the web process and the worker; no server to run (docs/operations.md).
    _broker_dir = VAR_DIR / "broker"
    _broker_dir.mkdir(exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(_broker_dir), "data_folder_out": str(_broker_dir), "processed_folder": str(_broker_dir / "processed"), "store_processed": False, "control_folder": str(_broker_dir / "control"),
                                      # kombu polls the folder once a second by default: a transaction
                                      # then waits ~1 s per hop (submit, confirm) on the embedded stack.
                                      "polling_interval": 0.1}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One queue for every task by default; LEDGER_TASK_QUEUE renames it (tests give each
# worker its own).
CELERY_TASK_DEFAULT_QUEUE = env("LEDGER_TASK_QUEUE", default="ledger")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "purge-idempotency-records": {"task": "ledger.tenancy.purge_idempotency_records", "schedule": 3600.0},
    "reconcile-inflight-transactions": {"task": "ledger.transactions.reconcile_inflight", "schedule": 15.0},
    "watch-pumps": {"task": "ledger.transactions.pump_watch", "schedule": 2.0},
    "fill-nonce-pools": {"task": "ledger.transactions.fill_nonce_pools", "schedule": 30.0},
    # Webhooks (docs/webhooks.md): retries that fell due, a loop whose worker died; the
    # network-event poller; the outbox's retention.
    "watch-webhook-deliveries": {"task": "ledger.webhooks.deliver_watch", "schedule": 2.0},
    "poll-network-events": {"task": "ledger.webhooks.poll_network_events", "schedule": env.float("LEDGER_NETWORK_EVENTS_POLL_SECONDS", default=2.0)},
    "purge-webhook-events": {"task": "ledger.webhooks.purge", "schedule": 3600.0},
    "staff-heartbeat": {"task": "ledger.backoffice.heartbeat", "schedule": 10.0},
    # Metrics and the dashboard's fee payer trend read stored balances, never an RPC per scrape.
    "sample-balances": {"task": "ledger.backoffice.sample_balances", "schedule": env.float("LEDGER_BALANCE_SAMPLE_SECONDS", default=60.0)},
    # Loans (docs/loans.md, "The keeper"): liquidatable loans flagged or liquidated.
    "loan-keeper": {"task": "ledger.loans.keeper", "schedule": env.float("LEDGER_LOAN_KEEPER_SECONDS", default=30.0)},
    # Batch payouts (docs/positions.md): items of a packed transaction that failed on chain
    # whose retry was not queued (a broker down) or not finished (a worker killed).
    "batch-retry-sweep": {"task": "ledger.positions.batch_retry_sweep", "schedule": 15.0},
    # Threshold keys (docs/threshold-signing.md): sessions past their time end.
    "threshold-sessions": {"task": "ledger.accounts.mpc_sweep", "schedule": 10.0},
}
# Beat reads the schedule from the database (django-celery-beat): operators change it in the
# admin; the entries above are seeded into it when missing and never written over
# (backoffice/scheduling.py, docs/admin.md "Scheduling"). LEDGER_BEAT_SCHEDULER=
# "celery.beat:PersistentScheduler" goes back to the file schedule of settings alone.
CELERY_BEAT_SCHEDULER = env("LEDGER_BEAT_SCHEDULER", default="backoffice.scheduling:LedgerDatabaseScheduler")
# Results of what beat sends are stored (django-celery-results, visible in the admin) and
# purged after a day by celery.backend_cleanup; the service's own tasks store none.
CELERY_RESULT_BACKEND = "django-db"
CELERY_RESULT_EXTENDED = True
CELERY_RESULT_EXPIRES = env.int("LEDGER_TASK_RESULT_EXPIRES_SECONDS", default=24 * 3600)

# --- API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenancy.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenancy.permissions.HasApiKey"],
    "DEFAULT_THROTTLE_CLASSES": ["tenancy.throttling.ApiKeyRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["ledger_project.api.parsers.LedgerJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["ledger_project.api.renderers.LedgerJSONRenderer"],
    "EXCEPTION_HANDLER": "ledger_project.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

# The OpenAPI document's settings (drf-spectacular): ledger_project/api/openapi_settings.py.
from ledger_project.api.openapi_settings import SPECTACULAR_SETTINGS  # noqa: E402, F401  (a setting)

# Requests per minute per API key unless the key carries its own limit (docs/api.md).
LEDGER_RATE_LIMIT_PER_MINUTE = env.int("LEDGER_RATE_LIMIT_PER_MINUTE", default=1200)
LEDGER_API_KEY_CACHE_SECONDS = env.float("LEDGER_API_KEY_CACHE_SECONDS", default=5.0)
LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS = env.int("LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS", default=3600)
LEDGER_IDEMPOTENCY_RETENTION_HOURS = env.int("LEDGER_IDEMPOTENCY_RETENTION_HOURS", default=48)
# How long a request waits for a concurrent request with the same x-request-id to finish.
LEDGER_IDEMPOTENCY_WAIT_SECONDS = env.float("LEDGER_IDEMPOTENCY_WAIT_SECONDS", default=30.0)

# Request limits (docs/api.md, Limits), checked before authentication: a body over
# LEDGER_MAX_BODY_BYTES is a 413; JSON nested deeper than LEDGER_MAX_JSON_DEPTH, an array
# longer than LEDGER_MAX_JSON_ARRAY_ITEMS, or a free-form metadata object over
# LEDGER_MAX_METADATA_BYTES (as compact JSON) / LEDGER_MAX_METADATA_KEYS is a 400.
LEDGER_MAX_BODY_BYTES = env.int("LEDGER_MAX_BODY_BYTES", default=1024 * 1024)
LEDGER_MAX_JSON_DEPTH = env.int("LEDGER_MAX_JSON_DEPTH", default=32)
LEDGER_MAX_JSON_ARRAY_ITEMS = env.int("LEDGER_MAX_JSON_ARRAY_ITEMS", default=1000)
LEDGER_MAX_METADATA_BYTES = env.int("LEDGER_MAX_METADATA_BYTES", default=16 * 1024)
LEDGER_MAX_METADATA_KEYS = env.int("LEDGER_MAX_METADATA_KEYS", default=100)
# Django's own cap on a body read into memory: the same number, so both agree.
DATA_UPLOAD_MAX_MEMORY_SIZE = LEDGER_MAX_BODY_BYTES

# Outbound calls to URLs a tenant gives (webhook endpointUrl, OAuth accessTokenUrl;
# ledger_project/outbound.py, docs/configuration.md): https only unless
# LEDGER_OUTBOUND_ALLOW_HTTP (default: DEBUG); the host must resolve to public addresses
# only, unless an address falls in LEDGER_OUTBOUND_ALLOWED_NETWORKS (CIDRs, e.g.
# "127.0.0.0/8,10.1.0.0/16" for a development receiver or a private egress proxy).
LEDGER_OUTBOUND_ALLOW_HTTP = env.bool("LEDGER_OUTBOUND_ALLOW_HTTP", default=DEBUG)
LEDGER_OUTBOUND_ALLOWED_NETWORKS = env.list("LEDGER_OUTBOUND_ALLOWED_NETWORKS", default=[])
# At most this many bytes of an outbound answer are read (the rest is never read).
LEDGER_OUTBOUND_MAX_RESPONSE_BYTES = env.int("LEDGER_OUTBOUND_MAX_RESPONSE_BYTES", default=4096)

# --- Webhooks and network events (docs/webhooks.md) ------------------------------------
# A webhook without its own timeout waits this long for an answer (the whole attempt,
# OAuth token request included).
LEDGER_WEBHOOK_TIMEOUT_SECONDS = env.int("LEDGER_WEBHOOK_TIMEOUT_SECONDS", default=10)
# Retries: the n-th failed attempt waits between half and all of min(BASE × 2^(n-1), MAX_DELAY)
# (exponential backoff, jitter); an event still failing WINDOW seconds after it happened is
# dead-lettered.
LEDGER_WEBHOOK_RETRY_BASE_SECONDS = env.float("LEDGER_WEBHOOK_RETRY_BASE_SECONDS", default=5.0)
LEDGER_WEBHOOK_RETRY_MAX_DELAY_SECONDS = env.float("LEDGER_WEBHOOK_RETRY_MAX_DELAY_SECONDS", default=3600.0)
LEDGER_WEBHOOK_RETRY_WINDOW_SECONDS = env.int("LEDGER_WEBHOOK_RETRY_WINDOW_SECONDS", default=24 * 3600)
# A claimed event whose attempt did not end this long after the claim (its worker died) is
# claimed again: longer than the longest webhook timeout (120 s).
LEDGER_WEBHOOK_CLAIM_SECONDS = env.float("LEDGER_WEBHOOK_CLAIM_SECONDS", default=150.0)
# Deliveries in flight at once in a delivery loop (one loop runs at a time: its lease).
LEDGER_WEBHOOK_DELIVERY_THREADS = env.int("LEDGER_WEBHOOK_DELIVERY_THREADS", default=16)
LEDGER_WEBHOOK_IDLE_SECONDS = env.float("LEDGER_WEBHOOK_IDLE_SECONDS", default=3.0)  # nothing due this long: the loop stops
LEDGER_WEBHOOK_RUN_SECONDS = env.float("LEDGER_WEBHOOK_RUN_SECONDS", default=20.0)  # one task's run; then a fresh task carries on
# After a signing-secret rotation the previous secret also signs for this long.
LEDGER_WEBHOOK_SECRET_OVERLAP_SECONDS = env.int("LEDGER_WEBHOOK_SECRET_OVERLAP_SECONDS", default=24 * 3600)
# Off: events are still recorded, nothing is sent (scripts/schemathesis_run.py: generated
# endpoints are random public addresses).
LEDGER_WEBHOOK_DELIVERY_ENABLED = env.bool("LEDGER_WEBHOOK_DELIVERY_ENABLED", default=True)
# Delivered, dead-lettered and cancelled events (and their attempts) are purged this long
# after they happened; replay reaches back this far.
LEDGER_WEBHOOK_RETENTION_DAYS = env.int("LEDGER_WEBHOOK_RETENTION_DAYS", default=30)
# account.network_event: every subscribed address is polled (getSignaturesForAddress,
# paged, from its cursor) this often; at most MAX_PAGES pages of 1000 per address and poll.
LEDGER_NETWORK_EVENTS_POLL_SECONDS = env.float("LEDGER_NETWORK_EVENTS_POLL_SECONDS", default=2.0)
LEDGER_NETWORK_EVENTS_MAX_PAGES = env.int("LEDGER_NETWORK_EVENTS_MAX_PAGES", default=50)

# --- Clusters -------------------------------------------------------------------------
# CHAIN_LOCALNET is the embedded node; every other cluster is enabled by giving its RPC URL,
# e.g. LEDGER_CLUSTERS="CHAIN_DEVNET=https://api.devnet.solana.com,CHAIN_MAINNET=https://...".
LEDGER_LOCALNET_HOST = env("LEDGER_LOCALNET_HOST", default="127.0.0.1")
LEDGER_LOCALNET_PORT = env.int("LEDGER_LOCALNET_PORT", default=8899)
LEDGER_LOCALNET_RPC_URL = env("LEDGER_LOCALNET_RPC_URL", default=f"http://{LEDGER_LOCALNET_HOST}:{LEDGER_LOCALNET_PORT}")
LEDGER_LOCALNET_DATA_DIR = Path(env("LEDGER_LOCALNET_DATA_DIR", default=str(VAR_DIR / "localnet")))
from ledger_project.localnet_settings import *  # noqa: E402, F401, F403  (the node's switches: genesis, blockSubscribe, airdrop funding)
from ledger_project.rpc_settings import named_urls as _named_urls  # noqa: E402

LEDGER_CLUSTERS = {"CHAIN_LOCALNET": LEDGER_LOCALNET_RPC_URL, **_named_urls("LEDGER_CLUSTERS")}
LEDGER_DEFAULT_CLUSTER = env("LEDGER_DEFAULT_CLUSTER", default="CHAIN_LOCALNET")
# The project's onchain programs per cluster (docs/programs.md, "Program ids"). CHAIN_LOCALNET's
# are fixed: the embedded node loads them at genesis. Other clusters: either configured here,
# LEDGER_PROGRAM_IDS="CHAIN_DEVNET.loan_vault=<address>,CHAIN_DEVNET.allowlist_hook=<address>",
# or recorded by `python manage.py deploy_programs --cluster NAME` (transactions.ProgramDeployment);
# a configured id wins over a recorded one.
from programs import LOCALNET_PROGRAM_IDS as _LOCALNET_PROGRAM_IDS, NAMES as _PROGRAM_NAMES  # noqa: E402

LEDGER_PROGRAM_IDS = {"CHAIN_LOCALNET": dict(_LOCALNET_PROGRAM_IDS)}
for _item in env.list("LEDGER_PROGRAM_IDS", default=[]):
    _key, _, _address = _item.partition("=")
    _cluster, _, _program = _key.strip().partition(".")
    if not (_cluster and _program in _PROGRAM_NAMES and 32 <= len(_address.strip()) <= 44):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"LEDGER_PROGRAM_IDS entry {_item!r}: expected CLUSTER.program=address, program one of {', '.join(_PROGRAM_NAMES)}.")
    LEDGER_PROGRAM_IDS.setdefault(_cluster, {})[_program] = _address.strip()
from ledger_project.rpc_settings import *  # noqa: E402, F401, F403  (the chain client: timeout, send URLs, budget, retries)
# Calls per JSON-RPC batch request (the pump's sends and reads); providers cap batches.
LEDGER_RPC_BATCH_SIZE = env.int("LEDGER_RPC_BATCH_SIZE", default=100)
# The transaction pump (transactions/pump.py, docs/transactions.md "The pump"): one per
# cluster, holding a lease renewed every pass; a killed holder's lease lapses after
# LEASE seconds and the next kick or watch takes over.
# Shards per cluster (docs/transactions.md, "Shards"): each has its own lease, so that many
# worker processes share the pump's work; one process can hold them all.
# 1 until same-slot balance writes are ordered across shards: with several shards, two
# transactions of one slot touching one position (batch payouts packed by different signers)
# were applied by two holders out of order (a reconcile drift in the batch crash test;
# docs/transactions.md, "Shards").
LEDGER_PUMP_SHARDS = env.int("LEDGER_PUMP_SHARDS", default=8)
LEDGER_PUMP_LEASE_SECONDS = env.float("LEDGER_PUMP_LEASE_SECONDS", default=5.0)
# A pump's pass that has not come back this long is taken for wedged: its lease keeper stops
# renewing and the shards lapse to another holder (a pass's calls each end at their deadline).
LEDGER_PUMP_STALL_SECONDS = env.float("LEDGER_PUMP_STALL_SECONDS", default=120.0)
LEDGER_PUMP_IDLE_SECONDS = env.float("LEDGER_PUMP_IDLE_SECONDS", default=3.0)  # nothing in flight this long: the pump stops
LEDGER_PUMP_RUN_SECONDS = env.float("LEDGER_PUMP_RUN_SECONDS", default=20.0)  # one task's run; then it hands over to a fresh task
# A worker's warm shutdown (SIGTERM, Ctrl-C) ends within this: the loops stop at their next
# safe point, and what still runs then is cut off (ledger_project/shutdown.py).
LEDGER_WORKER_STOP_SECONDS = env.float("LEDGER_WORKER_STOP_SECONDS", default=5.0)
LEDGER_PUMP_REBROADCAST_SECONDS = env.float("LEDGER_PUMP_REBROADCAST_SECONDS", default=2.0)  # not found this long after a send: send the same bytes again
LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS = env.float("LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS", default=2.0)  # CONFIRMED, waiting for finalization
# RECENT_BLOCKHASH transactions reuse a blockhash this process fetched at most this many
# seconds ago instead of one getLatestBlockhash per request; 0 fetches one every time
# (docs/performance.md, "Blockhash reuse").
LEDGER_BLOCKHASH_REUSE_SECONDS = env.float("LEDGER_BLOCKHASH_REUSE_SECONDS", default=2.0)
# Longest a request with ?wait=confirmed waits before answering with the current status.
LEDGER_WAIT_TIMEOUT_SECONDS = env.float("LEDGER_WAIT_TIMEOUT_SECONDS", default=30.0)
# Platform keys (docs/custody.md, "Platform keys"): addresses the operator holds for the
# platform outside the service (treasury, funding wallets), treated like the service's own
# fee payers and nonce pool: no organization records them, no message writes them.
LEDGER_PLATFORM_ADDRESSES = env.list("LEDGER_PLATFORM_ADDRESSES", default=[])
# How long a process trusts its copy of the platform's addresses (the keys a message is
# signed with are known to the engine directly; this covers addresses a message names).
LEDGER_PLATFORM_KEYS_CACHE_SECONDS = env.float("LEDGER_PLATFORM_KEYS_CACHE_SECONDS", default=5.0)
from ledger_project.fee_settings import *  # noqa: E402, F401, F403  (what the platform's fee payer pays)
# V0 messages compress through the tenant's own lookup tables; which tables a tenant has is
# read from the database at most once per this many seconds per process (docs/lookup-tables.md).
LEDGER_LOOKUP_TABLE_CACHE_SECONDS = env.float("LEDGER_LOOKUP_TABLE_CACHE_SECONDS", default=5.0)

# --- Durable nonce pool and transaction lifetimes (docs/transactions.md) -----------------
# The pool task keeps LEDGER_NONCE_POOL_TARGET free nonce accounts per cluster listed in
# LEDGER_NONCE_POOL_CLUSTERS (beat) and is kicked when a lease leaves fewer than LOW_WATER.
LEDGER_NONCE_POOL_CLUSTERS = env.list("LEDGER_NONCE_POOL_CLUSTERS", default=[LEDGER_DEFAULT_CLUSTER])
LEDGER_NONCE_POOL_TARGET = env.int("LEDGER_NONCE_POOL_TARGET", default=4)
LEDGER_NONCE_POOL_LOW_WATER = env.int("LEDGER_NONCE_POOL_LOW_WATER", default=2)
# Free nonce accounts beyond this many (never fewer than TARGET) are closed by the pool
# task, their rent withdrawn to the platform fee payer; above TARGET it leaves headroom so
# a pool whose demand swings is not created and closed over and over.
LEDGER_NONCE_POOL_TRIM_ABOVE = env.int("LEDGER_NONCE_POOL_TRIM_ABOVE", default=LEDGER_NONCE_POOL_TARGET)
# At most this many nonce accounts per cluster, free and leased (their rent is the platform
# fee payer's): past it a DURABLE_NONCE request answers 503 NONCE_POOL_EMPTY.
LEDGER_NONCE_POOL_MAX = env.int("LEDGER_NONCE_POOL_MAX", default=64)
# Nonce leases one tenant may hold at once (bound to its transactions): past it 429
# NONCE_LEASE_QUOTA_EXCEEDED, so one tenant cannot take the whole pool.
LEDGER_NONCE_LEASES_PER_TENANT = env.int("LEDGER_NONCE_LEASES_PER_TENANT", default=16)
LEDGER_NONCE_POOL_RETRY_AFTER_SECONDS = env.int("LEDGER_NONCE_POOL_RETRY_AFTER_SECONDS", default=5)
LEDGER_NONCE_LEASE_TIMEOUT_SECONDS = env.int("LEDGER_NONCE_LEASE_TIMEOUT_SECONDS", default=300)
# A DURABLE_NONCE transaction not landed this long after it was built (waiting for signatures or approval) or submitted is ended: nonce advanced, then EXPIRED.
LEDGER_DURABLE_NONCE_WINDOW_SECONDS = env.int("LEDGER_DURABLE_NONCE_WINDOW_SECONDS", default=24 * 3600)
# A held transaction whose fee payer signs off platform is looked for in the chain's history
# before it is called EXPIRED: at most this many signatures per expiry run (the next resumes).
LEDGER_LANDING_SCAN_PER_RUN = env.int("LEDGER_LANDING_SCAN_PER_RUN", default=200)
LEDGER_RESIGN_MAX = env.int("LEDGER_RESIGN_MAX", default=3)  # times a dropped transaction is signed again on a fresh blockhash (transactions/resign.py)
LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS = env.int("LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS", default=20)  # an unsent SIGNED one this near its lastValidBlockHeight is signed again before it is sent

# --- Key custody ----------------------------------------------------------------------
# The master key comes from LEDGER_MASTER_KEY or from an existing key file. Only the
# embedded development mode may generate the file (when a process starts); any other start without a
# key fails here, before a key could be made up next to the database and lost with it
# (docs/custody.md).
LEDGER_MASTER_KEY = env("LEDGER_MASTER_KEY", default="")
LEDGER_MASTER_KEY_FILE = Path(env("LEDGER_MASTER_KEY_FILE", default=str(VAR_DIR / "master.key")))
if not LEDGER_MASTER_KEY.strip(",") and LEDGER_EMBEDDED and not LEDGER_MASTER_KEY_FILE.exists():
    # Embedded mode makes the key file when a process starts, not when a first key is
    # sealed: `make run`'s first command (migrate) leaves it under var/, so the README's
    # `manage.py create_api_key` from another terminal (not in embedded mode) finds it.
    _create_private_file(LEDGER_MASTER_KEY_FILE, base64.urlsafe_b64encode(secrets.token_bytes(32)).decode() + "\n")
if not LEDGER_MASTER_KEY.strip(",") and not LEDGER_EMBEDDED and not LEDGER_MASTER_KEY_FILE.is_file():
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"No master key: LEDGER_MASTER_KEY is not set and the key file {LEDGER_MASTER_KEY_FILE} does not exist. "
        "Set LEDGER_MASTER_KEY to the base64 of 32 random bytes (or LEDGER_MASTER_KEY_FILE to an existing key file); "
        "only the embedded development mode (LEDGER_EMBEDDED=1, as `make run` and the tests set it) generates one. See docs/custody.md."
    )
LEDGER_SECRETS_DIR = Path(env("LEDGER_SECRETS_DIR", default=str(VAR_DIR / "secrets")))

# --- Web, static, i18n ----------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Staff passwords (the admin): Django's four validators (docs/admin.md, "Sign-in").
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": env.int("LEDGER_ADMIN_PASSWORD_MIN_LENGTH", default=12)}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- Logging: JSON lines carrying the request id; secrets and URLs are never logged -----
from ledger_project.logging import logging_config  # noqa: E402

LOG_LEVEL = env("LOG_LEVEL", default="INFO")
LOGGING = logging_config(level=LOG_LEVEL, http_client_level=env("LEDGER_HTTP_CLIENT_LOG_LEVEL", default="WARNING"))

if DATABASES["default"]["ENGINE"] == "ledger_project.sqlite":
    # A file, not :memory:, so that a real worker process and threads in the tests see
    # the same test database (pytest-xdist appends a per-worker suffix).
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_ledger.sqlite3")}

# Queues by task name prefix: tests point them at a queue of their own (tests/conftest.py).
CELERY_TASK_ROUTES = {"ledger.*": {"queue": CELERY_TASK_DEFAULT_QUEUE}}

# --- Back office (the admin; docs/admin.md) -------------------------------------------------
# Sign-in lockout (django-axes; backoffice/lockout.py): this many failures of one username from
# one address, each within LOCKOUT_SECONDS of the last, lock the pair for LOCKOUT_SECONDS.
LEDGER_ADMIN_LOCKOUT_FAILURES = env.int("LEDGER_ADMIN_LOCKOUT_FAILURES", default=5)
LEDGER_ADMIN_LOCKOUT_SECONDS = env.int("LEDGER_ADMIN_LOCKOUT_SECONDS", default=15 * 60)
from ledger_project.lockout_settings import *  # noqa: E402, F401, F403  (django-axes: AXES_*)
# Lists above this many rows show an estimated count on PostgreSQL instead of counting.
LEDGER_ADMIN_EXACT_COUNT_LIMIT = env.int("LEDGER_ADMIN_EXACT_COUNT_LIMIT", default=10_000)
# Filters by every value of a field (cluster, operation) and the date hierarchy's first
# year are read once per this many seconds, not with a scan on every page view.
LEDGER_ADMIN_FILTER_CHOICES_SECONDS = env.int("LEDGER_ADMIN_FILTER_CHOICES_SECONDS", default=300)
# Dashboard: a fee payer under this balance is flagged; a heartbeat older than this is
# stale; a cluster not answering within this long is shown as not answering.
LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS = env.int("LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS", default=100_000_000)
LEDGER_ADMIN_HEARTBEAT_STALE_SECONDS = env.int("LEDGER_ADMIN_HEARTBEAT_STALE_SECONDS", default=60)
LEDGER_ADMIN_NODE_TIMEOUT_SECONDS = env.float("LEDGER_ADMIN_NODE_TIMEOUT_SECONDS", default=2.0)

# --- Metrics (GET /metrics; docs/operations.md "Metrics", docs/auth.md "Metrics") ----------
# A scraper sends this bearer token (never an API key), or scrapes from these networks (CIDRs, the
# client's address as above). Embedded mode (`make run`, tests) allows loopback; production nothing.
LEDGER_METRICS_TOKEN = env("LEDGER_METRICS_TOKEN", default="")
LEDGER_METRICS_ALLOWED_NETWORKS = env.list("LEDGER_METRICS_ALLOWED_NETWORKS", default=["127.0.0.0/8", "::1/128"] if LEDGER_EMBEDDED else [])
# How often the worker reads the platform's balances (fee payer, nonce pool lamports) for
# /metrics and the dashboard's trend, and how long samples are kept.
LEDGER_BALANCE_SAMPLE_SECONDS = env.float("LEDGER_BALANCE_SAMPLE_SECONDS", default=60.0)
LEDGER_BALANCE_SAMPLE_RETENTION_HOURS = env.int("LEDGER_BALANCE_SAMPLE_RETENTION_HOURS", default=48)

# --- Threshold keys: backend FROST players (docs/threshold-signing.md) -------------------
# The service's own share holders of DKG accounts (privateKeyDetails.dkgKeys
# useBackendPlayersCodes). Each has its own key-encryption keyring, distinct from the master
# key: LEDGER_MPC_PLAYER_KEYS_<CODE> (comma-separated base64 keys, current first) or the key
# file LEDGER_MPC_PLAYER_KEY_DIR/<CODE>.key (embedded mode generates it). The accounts app
# refuses to start when two players' keys, or a player's and the master key, coincide.
LEDGER_MPC_BACKEND_PLAYERS = env.list("LEDGER_MPC_BACKEND_PLAYERS", default=["BACKEND_A", "BACKEND_B", "BACKEND_C"] if LEDGER_EMBEDDED else [])
LEDGER_MPC_PLAYER_KEY_DIR = Path(env("LEDGER_MPC_PLAYER_KEY_DIR", default=str(VAR_DIR / "mpc")))
LEDGER_MPC_PLAYER_KEYS = {code: env(f"LEDGER_MPC_PLAYER_KEYS_{code}", default="") for code in LEDGER_MPC_BACKEND_PLAYERS}
LEDGER_MPC_MAX_PLAYERS = env.int("LEDGER_MPC_MAX_PLAYERS", default=16)
# A key generation or refresh not finished this long after it started fails (naming a
# player that did not send its part); a signing session (and its unused nonces) ends this
# long after it opened — as long as a durable nonce keeps a transaction signable.
LEDGER_MPC_DKG_SESSION_SECONDS = env.int("LEDGER_MPC_DKG_SESSION_SECONDS", default=24 * 3600)
LEDGER_MPC_SIGNING_SESSION_SECONDS = env.int("LEDGER_MPC_SIGNING_SESSION_SECONDS", default=LEDGER_DURABLE_NONCE_WINDOW_SECONDS)

# --- Market data: onchain data sources (docs/marketdata.md) ---------------------------------
# One evaluation of a job (every source's call, the combining) ends this long after it
# starts; a refresh's claim on its source lasts that plus a build's RPC time.
LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS = env.float("LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS", default=10.0)
# Defaults of Create Onchain Data Source (partnerOracleDetails): the refresh interval of
# the source's periodic task, the feed's exponent and its staleness bound.
LEDGER_MARKETDATA_DEFAULT_REFRESH_SECONDS = env.int("LEDGER_MARKETDATA_DEFAULT_REFRESH_SECONDS", default=60)
LEDGER_MARKETDATA_DEFAULT_EXPONENT = env.int("LEDGER_MARKETDATA_DEFAULT_EXPONENT", default=-8)
LEDGER_MARKETDATA_DEFAULT_MAX_STALENESS_SECONDS = env.int("LEDGER_MARKETDATA_DEFAULT_MAX_STALENESS_SECONDS", default=300)
