"""Storage options on a shared server: which ones a browser user may set, and the ones the
operator binds to each allowed root.

A storage option can send the server's requests elsewhere (``endpoint_url``, ``client_kwargs``)
or pick whose credentials they carry (``profile``, ``key``, ``secret``): set from a browser, it
would make the server sign requests with the operator's credentials for any host. So a browser
user sets only the option names the operator lists (``app_storage_options`` setting; none by
default), never one of :data:`NEVER_FROM_BROWSER` or a name that looks like one, and the
operator binds endpoints and credentials to roots (``root_options`` setting), which win over
anything typed. The CLI, the operator's own shell, takes any option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from indexcore.config import Settings, variable
from indexcore.errors import StorageError
from indexcore.io.roots import inside, layers
from indexcore.io.storage import parse_storage_options

# options that redirect requests or choose credentials, in the backends fsspec knows (s3fs, gcsfs,
# adlfs, ossfs, HDFS, HTTP, FTP/SFTP...): never a browser user's, even when the operator lists them
NEVER_FROM_BROWSER = frozenset({
    "endpoint_url", "endpoint", "profile", "profile_name", "key", "secret", "token", "session_token",
    "client_kwargs", "config_kwargs", "s3_additional_kwargs", "host", "port", "user", "username",
    "password", "account_name", "account_key", "account_host", "connection_string", "sas_token",
    "credential", "credentials", "client_id", "client_secret", "tenant_id", "project", "access",
    "kerb_ticket", "extra_conf", "proxy", "proxies", "use_ssl", "verify", "headers", "storage_options",
})
# and any name that looks like one of those (another backend's spelling)
_NEVER_PATTERN = re.compile(r"endpoint|url|host|proxy|key|secret|token|passw|credential|profile|kwargs|"
                            r"account|auth|cert|session|header", re.IGNORECASE)


def never_from_browser(name: str) -> bool:
    """``name`` redirects requests or picks credentials: a browser user may never set it."""
    return name.lower() in NEVER_FROM_BROWSER or bool(_NEVER_PATTERN.search(name))


def browser_storage_options(text: str, allowed: Iterable[str]) -> dict:
    """The options a browser user typed (``key=value`` per line or comma) when every name is one
    the operator allows (``allowed``) and none redirects requests or picks credentials; else a
    StorageError naming the refused names (never their values)."""
    options = parse_storage_options(text.replace("\n", ","))
    if not options:
        return {}
    allowed = {a.strip() for a in allowed if a.strip() and not never_from_browser(a.strip())}
    refused = sorted(k for k in options if k not in allowed)
    if refused:
        what = (f"only {', '.join(sorted(allowed))} may be set here" if allowed else
                "storage options are not taken from the browser on this server")
        raise StorageError(f"storage option(s) {', '.join(refused)} refused: {what} (the operator binds "
                           f"endpoints and credentials to roots in {variable('root_options')})")
    return options


def bound_options(url: str, root_options: Iterable[tuple[str, str]]) -> dict:
    """The options the operator bound to the innermost root holding ``url`` (``root_options``:
    the setting's ``(root, options JSON)`` pairs); ``{}`` when no bound root holds it."""
    target = layers(url)[-1]
    best: tuple[int, dict] | None = None
    for root, text in root_options:
        where = layers(root)[-1]
        holds = (where.protocol, where.host) == (target.protocol, target.host) and inside(target.path, where.path)
        if holds and (best is None or len(where.path) > best[0]):
            best = (len(where.path), json.loads(text))
    return best[1] if best else {}


def app_storage_options(url: str, typed: str, config: Settings) -> dict:
    """What the app passes to the backend for ``url``: the browser user's allowed options with the
    operator's bound options over them."""
    return {**browser_storage_options(typed, config.app_storage_options), **bound_options(url, config.root_options)}
