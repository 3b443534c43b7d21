"""Everything that can go wrong with the Hub, each said as a sentence a person can act on."""

from __future__ import annotations


class HubError(Exception):
    """A failure with a message for the person using Hearth (str(error) is that message)."""

    kind = "error"


class HubOffline(HubError):
    kind = "offline"


class HubUnreachable(HubError):
    kind = "offline"


class RepoNotFound(HubError):
    kind = "not found"


class GatedRepo(HubError):
    kind = "gated"


class FileNotOnHub(HubError):
    kind = "not found"


class NotEnoughDisk(HubError):
    kind = "disk"


class VerificationFailed(HubError):
    kind = "corrupt"


class ConnectionLost(HubError):
    kind = "connection"


class DownloadCancelled(HubError):
    kind = "cancelled"


class DownloadBusy(HubError):
    kind = "busy"


class UnsafeHubPath(HubError):
    """A name from the Hub (a file, an ETag, a commit, a revision) that would lead outside the cache folder."""

    kind = "unsafe"
