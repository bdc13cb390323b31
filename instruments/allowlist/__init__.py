"""Allow-lists of instruments whose transfer hook is the project's allow-list program
(docs/instruments.md, "Allow-list"; the program and its account layout: docs/programs.md,
"allowlist_hook"). The list lives on chain only: every read decodes the account."""
