"""Thin entry point: ``python cli.py ...`` is the same as the ``fesens`` command."""

from fesens.cli import main

if __name__ == "__main__":
    main()
