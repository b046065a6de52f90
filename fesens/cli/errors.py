"""The error every fesens command raises for the user: one ``error: ...`` line and an exit code."""

from __future__ import annotations

import click


class FesensCliError(click.ClickException):
    """A one-line ``error: ...`` message and an exit code (2 bad input unless told)."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)
