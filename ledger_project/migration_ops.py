"""Operations the project's migrations share."""

from __future__ import annotations

from django.db import migrations


def move_content_types(source: str, target: str, models: tuple[str, ...]) -> migrations.RunPython:
    """For models that moved from app ``source`` to ``target`` keeping their tables:
    permissions, staff roles and the admin's history name a model by its content type, so
    the existing rows are renamed rather than left stale beside new ones (reversible)."""

    def move(apps, frm: str, to: str) -> None:
        content_types = apps.get_model("contenttypes", "ContentType")
        for model in models:
            if not content_types.objects.filter(app_label=to, model=model).exists():
                content_types.objects.filter(app_label=frm, model=model).update(app_label=to)

    return migrations.RunPython(lambda apps, schema_editor: move(apps, source, target), lambda apps, schema_editor: move(apps, target, source))
