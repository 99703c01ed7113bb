#!/usr/bin/env python
"""Django's command-line utility for Rank & Rate."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:  # a missing or bad environment variable: say which, without a traceback
        sys.stderr.write(f"configuration error: {error}\n(see README.md, 'Configuration')\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
