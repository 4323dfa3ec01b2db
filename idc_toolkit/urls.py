"""URLs as the toolkit prints and records them: credentials and secret-looking query values masked.

An endpoint URL may carry a password (``https://user:pass@host/v1``) or a key in its query
(``?api_key=…``); the URL itself still reaches the server, but every error line, record and
fingerprint holds :func:`mask_url`'s form.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
#: a query parameter whose name says it holds a secret (key, token, sig, ...)
SECRET_NAME = re.compile(r"(key|token|secret|passw|pwd|auth|sig|credential|session)", re.IGNORECASE)


def mask_url(url: str) -> str:
    """``url`` with any ``user:password@`` and every secret-looking query value replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK  # not a URL we can take apart: nothing of it is shown
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if SECRET_NAME.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
