"""Stopping a worker: SIGTERM asks the long-running loops to stop at their next safe point
(docs/operations.md, "Stopping").

The transaction pump and the webhook delivery loop each run inside one task for up to
LEDGER_PUMP_RUN_SECONDS / LEDGER_WEBHOOK_RUN_SECONDS; a warm shutdown waits for running
tasks, so they look at ``stopping()`` between passes and return, leaving what is left to
the rows (the next worker's start reconciles them).

Who gets the signal varies: systemd sends SIGTERM to every process of the unit at once,
Docker and Kubernetes to the main process only, a terminal's Ctrl-C sends SIGINT to the
whole group. Both cases end the same way:

- a prefork pool child does not die on SIGTERM (celery resets it to the default): a child
  killed while it waits for work holds the pool's queue lock, and the main process then
  blocks in billiard's ``Pool.join`` for ever. Here it only sets the flag; the child leaves
  when the main process's shutdown closes the pool, once its task returned;
- the main process, starting a warm shutdown (SIGTERM or SIGINT), sets the flag for tasks
  it runs itself (threads and solo pools) and passes SIGTERM on to its children; if it is
  still there LEDGER_WORKER_STOP_SECONDS later (a send or an RPC call that does not
  return), it kills its children and exits.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

logger = logging.getLogger("ledger.worker")

_stopping = threading.Event()


def stopping() -> bool:
    """Whether this process was asked to stop: loops return at their next safe point and
    queue no successor."""
    return _stopping.is_set()


def _stop_requested(signum=None, frame=None) -> None:
    _stopping.set()


def on_pool_child_start(**kwargs) -> None:
    """celery ``worker_process_init``: in a prefork child, SIGTERM asks for a stop."""
    from billiard import common

    _stopping.clear()  # a fork copies the parent's flag
    signal.signal(signal.SIGTERM, _stop_requested)
    # billiard installs its own exit-at-once handler on the terminate signals right after
    # this initializer runs (Worker.after_fork → reset_signals, for every handler that is
    # not SIG_IGN): take SIGTERM off its lists, in this child only, so ours stays.
    common.TERMSIGS_DEFAULT.discard("SIGTERM")
    common.TERMSIGS_FULL.discard("SIGTERM")


def _signal_children(signum: int) -> None:
    from billiard.process import active_children

    for child in active_children():
        try:
            os.kill(child.pid, signum)
        except (OSError, TypeError):
            pass  # gone already, or not started


def _deadline(seconds: float) -> None:
    """The warm shutdown's bound: still here after ``seconds``, the worker exits at once.
    Tasks not acknowledged are delivered again (acks_late, reject_on_worker_lost) and every
    task claims its work, so this costs a repeat, never a double effect."""
    time.sleep(seconds)
    logger.warning("the worker did not stop within %.0f s of the signal; exiting now", seconds)
    _signal_children(signal.SIGKILL)
    os._exit(1)


def on_worker_shutting_down(**kwargs) -> None:
    """celery ``worker_shutting_down`` (main process, in its signal handler): stop this
    process's loops, ask the pool's children (and beat) to stop theirs, and bound the
    whole shutdown by LEDGER_WORKER_STOP_SECONDS."""
    from django.conf import settings

    if _stopping.is_set():
        return  # a second signal: the first one's shutdown is under way
    _stopping.set()
    _signal_children(signal.SIGTERM)
    threading.Thread(target=_deadline, args=(settings.LEDGER_WORKER_STOP_SECONDS,), name="stop-deadline", daemon=True).start()
