"""A container image reference, as kubelet's runtimes read ``image:``: the grammar of
github.com/distribution/reference (``ReferenceRegexp``, ``ParseNormalizedNamed``), which containerd
and CRI-O parse every image with. Pure.

Why here: ``image:`` reaches podman's command line. A reference can never start with ``-``, hold
whitespace, ``=`` or a newline, so a string that passes cannot be read as an option — and what
does not pass is refused before podman sees it, as a CRI runtime refuses it.
"""

from __future__ import annotations

import re

# distribution/reference regexp.go, transcribed (ASCII-only: Go's \w and [[:xdigit:]] are ASCII).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN_AND_PORT = r"(?:" + _DOMAIN_NAME + "|" + _IPV6 + r")(?::[0-9]+)?"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_REMOTE_NAME = _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_NAME = r"(?:" + _DOMAIN_AND_PORT + r"/)?" + _REMOTE_NAME
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
REFERENCE = re.compile(r"(" + _NAME + r")(?::(" + _TAG + r"))?(?:@(" + _DIGEST + r"))?", re.ASCII)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}", re.ASCII)
NAME_TOTAL_LENGTH_MAX = 255  # reference.go


def image_error(ref: str) -> str | None:
    """Why ``ref`` is not an image reference (``None``: it is one). Mirrors ParseNormalizedNamed's
    refusals: the grammar (anchored: ``fullmatch``, never ``$`` which accepts a trailing newline),
    a name over 255 characters, a name that is only a 64-hex identifier."""
    if not ref:
        return "must be an image reference, not empty"
    m = REFERENCE.fullmatch(ref)
    if m is None:
        if ref != ref.strip():
            return "must not have leading or trailing whitespace"
        if REFERENCE.fullmatch(ref.lower()):
            return f"{_show(ref)} is not an image reference: repository names must be lowercase"
        return f"{_show(ref)} is not an image reference ([registry[:port]/]name[:tag][@digest])"
    if len(m.group(1)) > NAME_TOTAL_LENGTH_MAX:
        return f"image name must be at most {NAME_TOTAL_LENGTH_MAX} characters"
    if _IDENTIFIER.fullmatch(m.group(1)):
        return "cannot be a 64-character hexadecimal string (an image id); give a name"
    return None


def _show(text: str) -> str:
    """A refused value, quoted and shortened, printable on one line."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    return repr(shown)
