"""What the workflows share: the interruption signal."""

from __future__ import annotations


class Interrupted(Exception):  # noqa: N818 - it is a signal, not an error
    """A run stopped by Ctrl-C after saving its state; the message says how to resume."""

    exit_code = 130
