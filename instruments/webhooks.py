"""postTransactionSubmitWebhooks of an instrument: stored with their credentials sealed.

The delivery worker (the webhooks issue) opens them with ``accounts.custody.secret_open``;
responses never show a credential, only that one is set.
"""

from __future__ import annotations

from accounts.custody import secret_open, secret_seal

#: (config object, secret field) pairs in a webhook definition.
SECRET_FIELDS = (("apiKeyAuthConfig", "keyValue"), ("oauth2AuthConfig", "clientSecret"), ("oauth2AuthConfig", "password"))
REDACTED = "********"


def _purpose(hook: dict, config: str, field: str) -> str:
    return f"webhook:{hook.get('endpointUrl')}:{config}.{field}"


def sealed(hooks: list[dict]) -> list[dict]:
    """Validated webhook definitions → what the record stores."""
    out = []
    for hook in hooks:
        hook = {k: (dict(v) if isinstance(v, dict) else v) for k, v in hook.items() if v is not None}
        for config, field in SECRET_FIELDS:
            section = hook.get(config)
            if section and section.get(field) is not None:
                section[field] = {"sealed": secret_seal(value=section[field], purpose=_purpose(hook, config, field))}
        out.append(hook)
    return out


def redacted(hooks: list[dict]) -> list[dict]:
    """Stored definitions as responses show them."""
    out = []
    for hook in hooks or []:
        hook = {k: (dict(v) if isinstance(v, dict) else v) for k, v in hook.items()}
        for config, field in SECRET_FIELDS:
            section = hook.get(config)
            if section and field in section:
                section[field] = REDACTED
        out.append(hook)
    return out


def opened(hook: dict, config: str, field: str) -> str | None:
    """The clear credential of one stored webhook (for delivery)."""
    value = (hook.get(config) or {}).get(field)
    if not value:
        return None
    return secret_open(sealed=value["sealed"], purpose=_purpose(hook, config, field))
