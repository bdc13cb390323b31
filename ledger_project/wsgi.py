"""WSGI entry point (gunicorn ledger_project.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledger_project.settings")

application = get_wsgi_application()
