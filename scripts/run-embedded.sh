#!/usr/bin/env bash
# Serve the whole stack with the embedded defaults: local SVM node, Celery worker with
# beat, and the API under gunicorn. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PORT=${PORT:-8000}
LOCALNET_PORT=${LEDGER_LOCALNET_PORT:-8899}
mkdir -p var/log
# Embedded mode: without LEDGER_MASTER_KEY, a master key file is generated under var/ on
# first use. Production never sets this (settings refuse to start without a key).
export LEDGER_EMBEDDED=1
# Convenience of `make run` only (docs/accounts.md, "Who pays"): on the local node, seeds
# and rent without a funding account are paid from an airdrop, never the platform fee payer.
export LEDGER_LOCALNET_AIRDROP_FUNDING=${LEDGER_LOCALNET_AIRDROP_FUNDING:-true}
# Webhook receivers on this machine (docs/webhooks.md, Safety): http and loopback are allowed
# for `make run` only; production calls https endpoints on public addresses.
export LEDGER_OUTBOUND_ALLOW_HTTP=${LEDGER_OUTBOUND_ALLOW_HTTP:-true}
export LEDGER_OUTBOUND_ALLOWED_NETWORKS=${LEDGER_OUTBOUND_ALLOWED_NETWORKS:-127.0.0.0/8,::1/128}

pids=()
cleanup() {
  trap - EXIT INT TERM
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

$BIN/python manage.py localnet >>var/log/localnet.log 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if curl -s -m 1 -X POST -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"getHealth"}' "http://127.0.0.1:${LOCALNET_PORT}" | grep -q '"ok"'; then break; fi
  sleep 0.2
done

# Concurrency 3: while traffic flows, the transaction pump and the webhook delivery loop each
# hold a slot; the third runs the periodic tasks (network-event polls, reconciliation).
$BIN/celery -A ledger_project worker --beat --schedule var/celerybeat-schedule --concurrency 3 --loglevel INFO >>var/log/worker.log 2>&1 &
pids+=($!)

$BIN/python manage.py bootstrap_demo

cat <<BANNER

  Tokenized asset ledger service
  API:       http://127.0.0.1:${PORT}/api/v1/
  API docs:  http://127.0.0.1:${PORT}/api/docs/
  Health:    http://127.0.0.1:${PORT}/healthz
  Metrics:   http://127.0.0.1:${PORT}/metrics (Prometheus; loopback needs no key)
  Localnet:  http://127.0.0.1:${LOCALNET_PORT} (Solana JSON-RPC)
  Logs:      var/log/
  New API key:  .venv/bin/python manage.py create_api_key --org DEMO

BANNER

$BIN/gunicorn ledger_project.wsgi --config gunicorn.conf.py --bind "127.0.0.1:${PORT}" --access-logfile - &
pids+=($!)
wait -n "${pids[@]}"
