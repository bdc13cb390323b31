"""django-axes' settings for the staff sign-in lockout: how it reads LEDGER_ADMIN_LOCKOUT_FAILURES
and LEDGER_ADMIN_LOCKOUT_SECONDS (settings.py). backoffice/lockout.py holds the callables;
each reads those two settings when called, so a change of them takes effect like any setting."""

# django-axes first: it refuses a locked-out sign-in before any password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"  # shared by every web machine
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = "backoffice.lockout.failure_limit"
AXES_COOLOFF_TIME = "backoffice.lockout.cool_off"
AXES_USERNAME_CALLABLE = "backoffice.lockout.username"
AXES_CLIENT_IP_CALLABLE = "ledger_project.client_address.client_address"  # behind proxies too
AXES_LOCKOUT_CALLABLE = "backoffice.lockout.locked_out_response"
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a refused attempt does not lengthen the lock
AXES_ONLY_ADMIN_SITE = True  # the API signs in with API keys, never a password
AXES_ENABLE_ADMIN = False  # the back office shows the attempts itself (backoffice/admin.py)
AXES_DISABLE_ACCESS_LOG = True  # sign-ins are in the staff audit already
AXES_VERBOSE = False  # no banner; log lines name only the lockout parameters
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "password", "csrfmiddlewaretoken"]
