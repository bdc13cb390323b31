"""Template tags of the back office's admin templates (templates/admin/)."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template
from django.contrib import admin
from django.urls import NoReverseMatch, reverse

from backoffice.chainview import chain_url as _chain_url

register = template.Library()


@register.simple_tag
def chain_url(original):
    return _chain_url(original) if original is not None and getattr(original, "pk", None) is not None else None


@register.simple_tag(takes_context=True)
def related_links(context, original) -> list[dict]:
    """Every kind of record that points at ``original`` (reverse foreign keys, hidden ones
    included) that the user may see, as links to its list filtered on ``original``. No
    counting: a link costs no query."""
    request = context.get("request")
    links = []
    seen = set()
    for rel in original._meta.get_fields(include_hidden=True):
        if not (rel.auto_created and not rel.concrete and (rel.one_to_many or rel.one_to_one)):
            continue
        model, field = rel.related_model, rel.field
        model_admin = admin.site._registry.get(model)
        if model_admin is None or (request is not None and not model_admin.has_view_or_change_permission(request)):
            continue
        target = field.target_field
        value = getattr(original, target.attname)
        key = (model, field.name)
        if value is None or key in seen:
            continue
        seen.add(key)
        try:
            base = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        except NoReverseMatch:
            continue
        links.append({"label": f"{model._meta.verbose_name_plural} ({field.verbose_name})", "url": f"{base}?{urlencode({f'{field.name}__{target.attname}__exact': value})}"})
    return sorted(links, key=lambda link: link["label"])


@register.filter
def sol(lamports):
    """Lamports as SOL (exact decimal), e.g. 1500000000 → 1.5."""
    from decimal import Decimal

    if lamports is None:
        return "—"
    value = (Decimal(int(lamports)) / Decimal(10**9)).normalize()
    return f"{value:f}"


@register.filter
def age(seconds):
    """Seconds as a short age: 42 s, 3 min, 2 h."""
    if seconds is None:
        return "never"
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
