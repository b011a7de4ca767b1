"""CLI commands; each module registers its own subparsers (see :mod:`indexcore.cli`)."""
