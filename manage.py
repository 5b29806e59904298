#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "finops.settings")
    from django.core.management import execute_from_command_line

    from finops.management.unreachable import one_line_when_services_down

    with one_line_when_services_down(sys.argv[1] if len(sys.argv) > 1 else "manage.py"):
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
