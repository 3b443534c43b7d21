"""What can stop a check: a cancel, or a problem a person can fix (said in words)."""

from __future__ import annotations


class CheckError(Exception):
    """A model, text or question file that cannot be used; the message says which and why."""


class InputError(CheckError):
    """A text or question file that cannot be used."""


class TokenizerMismatch(CheckError):
    """A candidate does not share the reference's tokenizer."""


class Cancelled(Exception):
    """The user cancelled the check; nothing of it was saved."""
