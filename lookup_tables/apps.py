from django.apps import AppConfig


class LookupTablesConfig(AppConfig):
    """Tenants' address lookup tables (docs/lookup-tables.md). The area stands on the engine
    and the accounts; the engine compresses V0 messages through the tables it registers."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "lookup_tables"
    verbose_name = "Lookup tables"

    def ready(self) -> None:
        from transactions.compression import register_table_source

        from . import effects  # noqa: F401  (registers the lookup tables' transaction effects)
        from .compression import tenant_tables

        register_table_source(tenant_tables)
