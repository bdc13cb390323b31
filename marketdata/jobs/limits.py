"""Bounds of a job definition and of one evaluation (docs/marketdata.md, "Limits").

A definition is tenant input that a worker executes: every dimension that costs a worker
time, threads, memory or outbound calls is capped when the definition is saved."""

#: the definition's JSON text, UTF-8 bytes
MAX_DEFINITION_BYTES = 32 * 1024
#: tasks in the whole definition, nested jobs included
MAX_TASKS = 64
#: tasks in one job (one pipeline)
MAX_TASKS_PER_JOB = 16
#: jobs inside jobs: the top-level job is depth 1, a medianTask's jobs depth 2, theirs 3
MAX_JOB_DEPTH = 3
#: httpTasks in the whole definition (outbound calls per evaluation)
MAX_SOURCES = 16
#: jobs of one medianTask / meanTask
MAX_JOBS_PER_AGGREGATE = 16
MAX_URL_CHARS = 2048
MAX_HEADERS = 16
MAX_HEADER_NAME_CHARS = 64
MAX_HEADER_VALUE_CHARS = 1024

#: a source's answer is read up to this many bytes (more is an error: the connection is
#: closed, not drained); the webhook cap (LEDGER_OUTBOUND_MAX_RESPONSE_BYTES, 4 KiB) is for
#: acknowledgements, not price documents
MAX_RESPONSE_BYTES = 256 * 1024
#: characters of each answer kept in the evaluation record
EXCERPT_CHARS = 500
#: the longest evaluation a caller may ask for
MAX_TIMEOUT_SECONDS = 120.0
