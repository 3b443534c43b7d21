"""Calls to the Hub through huggingface_hub, with its exceptions turned into HubErrors that say what to do."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from engine.hub.errors import FileNotOnHub, GatedRepo, HubError, HubOffline, HubUnreachable, RepoNotFound
from engine.hub.settings import READ_TIMEOUT_S, HubSettings

T = TypeVar("T")
LIBRARY = "hearth"


def no_telemetry() -> None:
    """Hearth tells the Hub no more than each request needs.

    huggingface_hub's user agent otherwise carries the torch version and the
    result of an "AI agent" detection, whose registry it fetches from the
    endpoint it was imported with (huggingface.co even when HF_ENDPOINT is set
    later). HF_HUB_DISABLE_TELEMETRY=1 turns both off; the library reads it once,
    at import, so its constant is set here.
    """
    from huggingface_hub import constants

    constants.HF_HUB_DISABLE_TELEMETRY = True


def api(settings: HubSettings) -> Any:
    from huggingface_hub import HfApi

    no_telemetry()
    # token=False, not None: None would make the library read its own token file from where it
    # was when imported; HubSettings has already looked there, now
    return HfApi(endpoint=settings.endpoint, token=settings.token or False, library_name=LIBRARY)


def headers(settings: HubSettings) -> dict[str, str]:
    from huggingface_hub.utils import build_hf_headers

    no_telemetry()
    return build_hf_headers(token=settings.token or False, library_name=LIBRARY)


def call(settings: HubSettings, repo_id: str | None, action: Callable[[], T]) -> T:
    """Run one Hub request: offline at once if it cannot be reached, errors as HubErrors."""
    settings.check_reachable()
    try:
        return action()
    except HubError:
        raise
    except ImportError as error:  # a build without huggingface_hub (the GGUF bundle leaves it out)
        raise HubError("Getting models needs the huggingface_hub package, which this Hearth does not have: "
                       f"pip install huggingface_hub ({error}).") from error
    except Exception as error:
        raise translate(error, settings, repo_id) from error


def translate(error: Exception, settings: HubSettings, repo_id: str | None) -> HubError:
    """One library or network exception as a sentence for the person using Hearth."""
    from huggingface_hub import errors

    name = repo_id or "this model"
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, errors.OfflineModeIsEnabled):
        return HubOffline("Offline mode is on (HF_HUB_OFFLINE), so the Hub is not asked. Models already "
                          "downloaded still work.")
    if isinstance(error, errors.GatedRepoError) or status == 403:
        return gated(settings, name, status or 401)
    if isinstance(error, errors.HFValidationError):
        return RepoNotFound(f"{name!r} is not a model name the Hub accepts: it is written org/name.")
    if isinstance(error, errors.RevisionNotFoundError):
        return RepoNotFound(f"{name} has no revision by that name on the Hub. Leave the revision empty for main.")
    if isinstance(error, errors.RepositoryNotFoundError):
        extra = (" If it is private, add a token that can read it." if settings.token is None
                 else " The token given cannot see it either.")
        return RepoNotFound(f"There is no model {name} on the Hub ({settings.endpoint}): check the name.{extra}")
    if isinstance(error, errors.EntryNotFoundError):
        return FileNotOnHub(f"{name} has no such file on the Hub. List its files to see what it has.")
    if _is_network_error(error):
        return HubUnreachable(f"The Hugging Face Hub ({settings.endpoint}) stopped answering ({_short(error)}). "
                              "Check the network connection and try again.")
    if status:
        return HubError(f"The Hub answered {status} for {name} ({_short(error)}). Try again later.")
    return HubError(f"Talking to the Hub about {name} failed: {_short(error)}")


def gated(settings: HubSettings, repo_id: str, status: int) -> GatedRepo:
    who = "without a token" if settings.token is None else "with the token given"
    return GatedRepo(f"{repo_id} is gated or private: the Hub refused the download {who} ({status}). Accept the "
                     f"license on the model's page ({settings.page_url(repo_id)}), then add a token (the token "
                     "field, or HF_TOKEN) of the account that accepted it.")


def _is_network_error(error: Exception) -> bool:
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"TransportError", "NetworkError", "TimeoutException", "ConnectError", "RemoteProtocolError",
                         "ConnectionError", "Timeout"}) or isinstance(error, (ConnectionError, TimeoutError))


def _short(error: BaseException, limit: int = 200) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_info(settings: HubSettings, repo_id: str, revision: str | None = None) -> Any:
    """The repo's metadata with every file's size and checksums (sha256 of LFS files, git id of the rest)."""
    return call(settings, repo_id, lambda: api(settings).model_info(
        repo_id, revision=revision, files_metadata=True, timeout=READ_TIMEOUT_S))
