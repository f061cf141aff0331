"""Credentials kept out of messages: header checks, and redaction of what errors quote.

Two lines of defence. Headers are checked before anything is sent
(``check_headers``): a value HTTP cannot carry (a token read from a file with
its trailing newline, a non-ASCII character) fails with a ``ValueError`` that
names the header, never its value, where httpx and h11 would raise errors
quoting it. And every message built from something that may quote a
credential (a transport error, a server's answer to a refused request, a
URL) goes through ``redact``, which replaces the values of credential-bearing
headers (and the password of a URL's userinfo) with ``***``; ``guard_logs``
does the same for the records of the libraries below (httpx logs every
request's URL, the SDK on Python 3.10 every refusal's message).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "check_api_key",
    "check_headers",
    "guard_logs",
    "credential_forms",
    "is_sensitive",
    "quoted",
    "redact",
    "redact_url",
    "scrub",
    "secrets_of",
]

REDACTED = "***"

# RFC 9110 token characters: what a header name may be made of.
_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
# h11's rule for a value (RFC 9110 field-value with obs-text): no NUL, no
# whitespace but inner spaces and tabs. httpx encodes str values as ASCII.
_VALUE = re.compile(r"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")

# Headers whose values are credentials whatever they hold.
_SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"})
# Words that make any other header a credential's carrier (x-auth-token, x-tenant-secret, ...).
_SENSITIVE_WORDS = re.compile(r"key|token|secret|auth|passw|session|cookie|signature|credential", re.I)
# Parts of a credential shorter than this are not redacted on their own: a
# scheme word or a short tag would blank unrelated text.
_MIN_PART = 6
# A URL's userinfo: ``scheme://user:password@host``.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s]*):(?P<password>[^/@\s]*)@")


def is_sensitive(name: str) -> bool:
    """Whether a header named ``name`` carries a credential."""
    return name.lower() in _SENSITIVE or _SENSITIVE_WORDS.search(name) is not None


def _problem(value: str) -> str | None:
    """What makes ``value`` a header value HTTP cannot carry, or ``None``."""
    try:
        value.encode("ascii")
    except UnicodeEncodeError:
        return "it contains a character that is not ASCII"
    if _VALUE.fullmatch(value) is not None:
        return None
    if value != value.strip():
        return "it begins or ends with whitespace (a newline read from a file, say)"
    if "\x00" in value:
        return "it contains a NUL character"
    return "it contains a line break or another control character"


def check_headers(headers: object, where: str = "headers") -> None:
    """Raise unless ``headers`` is ``None`` or a mapping of headers HTTP can carry.

    Args:
        headers: The headers to check.
        where: How the caller names them, for the message.

    Raises:
        TypeError: ``headers`` is not a mapping, or a name or value is not a ``str``.
        ValueError: A name is not an HTTP token, or a value cannot be sent.
            The message names the header, never its value.
    """
    if headers is None:
        return
    if not isinstance(headers, Mapping):
        raise TypeError(f"{where} must be a mapping of header names to values, got {type(headers).__name__}")
    for name, value in headers.items():
        if not isinstance(name, str):
            raise TypeError(f"{where}: a header name must be a str, got {type(name).__name__}")
        if _NAME.fullmatch(name) is None:
            raise ValueError(f"{where}: {name!r:.60} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise TypeError(f"{where}[{name!r}] must be a str, got {type(value).__name__}")
        problem = _problem(value)
        if problem is not None:
            raise ValueError(f"{where}[{name!r}] has a value HTTP cannot carry: {problem}")


def check_api_key(api_key: object) -> None:
    """Raise unless ``api_key`` is ``None`` or a ``str`` an ``x-api-key`` header can carry.

    Raises:
        TypeError: ``api_key`` is not a ``str``.
        ValueError: It cannot be sent; the message does not quote it.
    """
    if api_key is None:
        return
    if not isinstance(api_key, str):
        raise TypeError(f"api_key must be a str, got {type(api_key).__name__}")
    problem = _problem(api_key)
    if problem is not None:
        raise ValueError(f"api_key has a value HTTP cannot carry (it is sent as x-api-key): {problem}")


def credential_forms(value: str) -> set[str]:
    """The spellings of a credential a message may hold: as sent, trimmed,
    escaped as a repr shows it, and its long words (the token after ``Bearer``)."""
    forms = {value, value.strip()}
    forms |= {repr(form)[1:-1] for form in list(forms)}
    forms |= {part for part in value.split() if len(part) >= _MIN_PART}
    return {form for form in forms if form and (len(form) >= _MIN_PART or form == value.strip())}


def secrets_of(headers: Iterable[tuple[str, str]] | Mapping[str, str] | None) -> frozenset[str]:
    """The credential values among ``headers`` (a mapping or ``(name, value)``
    pairs), in every form ``redact`` must find."""
    if not headers:
        return frozenset()
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: set[str] = set()
    for name, value in items:
        if is_sensitive(name) and isinstance(value, str) and value.strip():
            found |= credential_forms(value)
    return frozenset(found)


def redact_url(text: str) -> str:
    """``text`` with the password of every URL's userinfo replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (longest first) and URL passwords replaced by ``***``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return redact_url(text)


def scrub(value: Any, secrets: Iterable[str], depth: int = 8) -> Any:
    """``value`` (an answer's parsed body) with every string in it redacted."""
    secrets = frozenset(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if depth <= 0:
        return value
    if isinstance(value, dict):
        return {key: scrub(item, secrets, depth - 1) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item, secrets, depth - 1) for item in value]
    return value


def quoted(value: Any, limit: int = 200) -> str:
    """A repr of ``value`` cut at ``limit`` characters, for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# --- third-party log records ---------------------------------------------------------

# The credentials configured in this process, for the log filter: libraries
# below log what they are given (httpx the URL of every request, with its
# userinfo; the SDK, on Python 3.10, the message of every refusal).
_KNOWN: set[str] = set()
_KNOWN_LIMIT = 10_000
_KNOWN_LOCK = threading.Lock()
# Loggers whose records may quote a credential: httpx's request log, the SDK's error log.
_GUARDED_LOGGERS = ("httpx", "langgraph_sdk.errors")


class _RedactRecords(logging.Filter):
    """Rewrites a record whose message quotes a known credential or a URL password."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's to report
            return True
        with _KNOWN_LOCK:
            known = tuple(_KNOWN)
        clean = redact(message, known)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = _RedactRecords()


def guard_logs(secrets: Iterable[str]) -> None:
    """Keep ``secrets`` (and URL passwords) out of the records of the loggers
    below this library (httpx, the SDK); installs their filter once."""
    with _KNOWN_LOCK:
        for secret in secrets:
            if len(_KNOWN) >= _KNOWN_LIMIT:
                break
            _KNOWN.add(secret)
    for name in _GUARDED_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
