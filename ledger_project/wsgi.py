"""WSGI entry point (gunicorn ledger_project.wsgi).

``close_when_body_unread`` wraps the Django application: an answer given before the request
body was read to its end (413 from Content-Length, 411 for a chunked body, a 401 of a
request whose body was never looked at) closes the connection — gunicorn sends
``Connection: close`` and closes after the answer, lingering to drain what the client is
still sending (RFC 9112 §9.6) — instead of keeping it alive with the unread rest of the body
still on it. A client that reuses such a connection would otherwise read the next answer
out of step with its requests (docs/api.md, Limits).
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledger_project.settings")


class _CountedInput:
    """``wsgi.input`` counting the bytes the application read (Django reads through
    LimitedStream: ``read`` and ``readline``)."""

    def __init__(self, stream):
        self._stream = stream
        self.consumed = 0
        self.ended = False

    def _counted(self, data: bytes, size) -> bytes:
        self.consumed += len(data)
        if not data or size is None or size < 0:
            self.ended = True
        return data

    def read(self, size=-1):
        return self._counted(self._stream.read(size), size)

    def readline(self, size=-1):
        data = self._stream.readline(size)
        self.consumed += len(data)
        if not data:
            self.ended = True
        return data

    def readlines(self, hint=-1):
        return list(iter(self.readline, b""))

    def __iter__(self):
        return iter(self.readline, b"")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _declared_length(environ) -> int | None:
    """The body's declared length; None for a body of unknown length (Transfer-Encoding)."""
    if environ.get("HTTP_TRANSFER_ENCODING"):
        return None
    try:
        return max(0, int(environ.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return None


def close_when_body_unread(app):
    def application(environ, start_response):
        length = _declared_length(environ)
        if length == 0:
            return app(environ, start_response)
        counted = _CountedInput(environ["wsgi.input"])
        environ["wsgi.input"] = counted

        def starting(status, headers, exc_info=None):
            unread = (not counted.ended) if length is None else counted.consumed < length
            if unread:
                # gunicorn's start_response is its Response's method; force_close makes it
                # announce and do the close. Another server: nothing to do here.
                force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
                if callable(force_close):
                    force_close()
            return start_response(status, headers, exc_info) if exc_info is not None else start_response(status, headers)

        return app(environ, starting)

    return application


application = close_when_body_unread(get_wsgi_application())
