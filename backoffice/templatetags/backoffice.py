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
    from backoffice.records import extra_related_links

    links += extra_related_links(request, original)
    return sorted(links, key=lambda link: link["label"])


@register.simple_tag(takes_context=True)
def transaction_decoded(context, original) -> dict:
    """The transaction page's decoded view (backoffice/records.py)."""
    from backoffice.records import transaction_view

    return transaction_view(context.get("request"), original)


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


def _date_hierarchy(cl):
    """Django's date hierarchy without its scans: Django offers only the years, months and
    days that hold rows (a DISTINCT over the filtered table on every page view, plus a
    MIN/MAX). Here the years run from the model's first (one MIN, cached) to now, the
    months and days are the calendar's: a choice without rows shows an empty list."""
    import calendar
    import datetime

    from django.conf import settings
    from django.core.cache import cache
    from django.db import models
    from django.utils import formats, timezone
    from django.utils.text import capfirst

    field_name = cl.date_hierarchy
    year_field, month_field, day_field = f"{field_name}__year", f"{field_name}__month", f"{field_name}__day"
    year, month, day = (cl.params.get(f) for f in (year_field, month_field, day_field))
    year, month, day = (int(v[-1] if isinstance(v, list) else v) if v else None for v in (year, month, day))

    def link(filters):
        return cl.get_query_string(filters, [f"{field_name}__"])

    today = timezone.localdate()
    key = f"backoffice:first-year:{cl.model._meta.label_lower}:{field_name}"
    first_year = cache.get(key)
    if first_year is None:
        first = cl.model._default_manager.aggregate(first=models.Min(field_name))["first"]
        first_year = first.year if first is not None else today.year
        cache.set(key, first_year, settings.LEDGER_ADMIN_FILTER_CHOICES_SECONDS)
    if year and month and day:
        chosen = datetime.date(year, month, day)
        return {"show": True, "back": {"link": link({year_field: year, month_field: month}), "title": capfirst(formats.date_format(chosen, "YEAR_MONTH_FORMAT"))},
                "choices": [{"title": capfirst(formats.date_format(chosen, "MONTH_DAY_FORMAT"))}]}
    if year and month:
        last = calendar.monthrange(year, month)[1] if (year, month) != (today.year, today.month) else today.day
        return {"show": True, "back": {"link": link({year_field: year}), "title": str(year)},
                "choices": [{"link": link({year_field: year, month_field: month, day_field: d}),
                             "title": capfirst(formats.date_format(datetime.date(year, month, d), "MONTH_DAY_FORMAT"))} for d in range(1, last + 1)]}
    if year:
        last = 12 if year != today.year else today.month
        return {"show": True, "back": {"link": link({}), "title": "All dates"},
                "choices": [{"link": link({year_field: year, month_field: m}), "title": capfirst(formats.date_format(datetime.date(year, m, 1), "YEAR_MONTH_FORMAT"))}
                            for m in range(1, last + 1)]}
    return {"show": True, "back": None, "choices": [{"link": link({year_field: str(y)}), "title": str(y)} for y in range(min(first_year, today.year), today.year + 1)]}


@register.tag(name="fast_date_hierarchy")
def fast_date_hierarchy_tag(parser, token):
    from django.contrib.admin.templatetags.base import InclusionAdminNode

    return InclusionAdminNode(parser, token, func=_date_hierarchy, template_name="date_hierarchy.html", takes_context=False)
