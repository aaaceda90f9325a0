"""A model's ``config.json`` from a Hugging Face repository, through ``huggingface_hub``.

``huggingface_hub`` is an optional extra (``pip install 'perfgraph[hub]'``): only
``perfgraph import-model ORG/NAME`` needs it, and reading a config.json on disk never does.
The download goes through the library's own cache, so a file fetched once (by perfgraph,
transformers or vLLM) is read from disk; ``HF_HUB_CACHE`` moves that cache and
``HF_HUB_OFFLINE=1`` (or ``offline=True``) forbids the network, both read when called.

Every failure is an :class:`ImportModelError` that names the repository and says what to do:
the package missing, a malformed id, offline with no cached copy, no such repository or
revision, a gated repository, or the Hub unreachable.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from perfgraph.errors import ImportModelError

__all__ = ["HUB_EXTRA", "fetch_config", "is_repo_id_like"]

HUB_EXTRA = "pip install 'perfgraph[hub]'"

#: ORG/NAME as the Hub allows it: letters, digits, '-', '_', '.'; no '--' or '..'; no
#: leading or trailing '-' or '.'; at most 96 characters (huggingface_hub validate_repo_id).
_PART = r"[A-Za-z0-9_](?:[\w.-]*[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"{_PART}/{_PART}")


def is_repo_id_like(text: str) -> bool:
    """Whether a command-line argument that names no file is meant as a repository id:
    one slash, and not the look of a path (``.json``, ``./``, ``/``, ``~``, a backslash)."""
    return (text.count("/") == 1 and not text.lower().endswith(".json")
            and not text.startswith((".", "/", "~")) and "\\" not in text)


def _offline(offline: bool | None) -> bool:
    if offline is not None:
        return offline
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _check_id(repo_id: str) -> None:
    if len(repo_id) > 96 or not REPO_ID.fullmatch(repo_id) or ".." in repo_id \
            or "--" in repo_id:
        raise ImportModelError(
            "not a Hugging Face repository id: expected ORG/NAME (letters, digits, '-', '_', "
            "'.'; no '--' or '..'), or the path of a config.json", file=repo_id)


def fetch_config(repo_id: str, *, revision: str | None = None,
                 offline: bool | None = None) -> Path:
    """The local path of ``repo_id``'s config.json, downloaded into the Hub cache if needed.

    ``offline`` None follows ``HF_HUB_OFFLINE``; the cache is ``HF_HUB_CACHE`` if set, else
    the library's default (``~/.cache/huggingface/hub``).
    """
    _check_id(repo_id)
    try:
        from huggingface_hub import errors, hf_hub_download
    except ImportError:
        raise ImportModelError(
            f"reading a Hugging Face repository needs the huggingface_hub package: {HUB_EXTRA} "
            "(or download config.json and pass its path)", file=repo_id) from None
    offline = _offline(offline)
    where = repo_id + (f"@{revision}" if revision else "")
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision,
                                    cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                                    local_files_only=offline))
    except errors.HFValidationError as exc:
        raise ImportModelError(f"not a valid repository id or revision: {exc}",
                               file=where) from None
    except errors.LocalEntryNotFoundError:
        why = ("offline (HF_HUB_OFFLINE) and config.json is not in the Hugging Face cache"
               if offline else "config.json is not in the Hugging Face cache and the Hub "
               "could not be reached")
        raise ImportModelError(f"{why}; download it once online, or pass the path of a "
                               "config.json", file=where) from None
    except errors.GatedRepoError:
        raise ImportModelError("the repository is gated: accept its terms on huggingface.co "
                               "and log in (hf auth login)", file=where) from None
    except errors.RepositoryNotFoundError:
        raise ImportModelError("no such repository on the Hugging Face Hub (or it is private)",
                               file=where) from None
    except errors.RevisionNotFoundError:
        raise ImportModelError(f"no revision {revision!r} in the repository",
                               file=where) from None
    except errors.EntryNotFoundError:
        raise ImportModelError("the repository has no config.json", file=where) from None
    except (errors.HfHubHTTPError, OSError) as exc:
        raise ImportModelError(f"cannot fetch config.json: {exc}", file=where) from None
