"""YAML scalars as Kubernetes reads them, without PyYAML.

Kubernetes reads YAML with sigs.k8s.io/yaml: go-yaml v2 decodes it into interface{}, the result is
converted to JSON (non-string map keys become strings) and decoded with encoding/json into the typed
object, where a number in a string field is an error (kubectl, the API server and kubelet's config
loader all convert without a typed target). This module holds go-yaml v2's resolve rules
(goyaml.v2/resolve.go) and the key conversion of sigs.k8s.io/yaml's convertToJSONableObject, for
``yamlsafe``. It imports no YAML library.
"""

from __future__ import annotations

import math
import re
import struct

_GO_MAP: dict[str, object] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_HINT_MAP = frozenset("yYnNtTfFoO~")
_GO_INT_RE = (r"([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z")  # ParseInt(s, 0, 64)
_GO_BASES = {"x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2}
_YAML_STYLE_FLOAT_RE = (r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_GO_FLOAT_RE = (r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")  # ParseFloat, decimal form
_TIMESTAMP_RE = (r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
                        r"(?:(?:[Tt]| )[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?\Z")
_PATTERNS: dict[str, re.Pattern] = {}  # compiled on first use: a sync that parses no file needs none


def _rx(name: str) -> re.Pattern:
    rx = _PATTERNS.get(name)
    if rx is None:
        rx = _PATTERNS[name] = re.compile(globals()[name + "_RE"])
    return rx


_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1


def _go_int(plain: str) -> int | None:
    """strconv.ParseInt(plain, 0, 64), then ParseUint, then big.Int's SetString(plain, 0): the
    integer go-yaml v2 gives a plain scalar, or None when it is no integer in Go's syntax."""
    m = _rx("_GO_INT").match(plain)
    if m is None:
        return None
    sign, body = m.groups()
    if len(body) > 1 and body[0] == "0":
        base = _GO_BASES.get(body[1], 8)
        digits = body[2:] if body[1] in _GO_BASES else body[1:]
    else:
        base, digits = 10, body
    return (-1 if sign == "-" else 1) * int(digits or "0", base)  # in int64, uint64 or a big.Int


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) for decimal text; None on a syntax error or an overflow."""
    if not _rx("_GO_FLOAT").match(text):
        return None
    f = float(text)
    return None if math.isinf(f) else f


def go_scalar(text: str) -> object:
    """What a plain (unquoted) scalar becomes in Kubernetes: go-yaml v2's resolve() and decoding into
    interface{} (a timestamp stays its text there)."""
    c = text[:1]
    if c and not (c in "+-.0123456789" or c in _HINT_MAP):
        return text
    if text in _GO_MAP:
        return _GO_MAP[text]
    if c == ".":
        f = _go_float(text)
        return text if f is None else f
    if c in _HINT_MAP or not c:
        return text
    if _rx("_TIMESTAMP").match(text):
        return text
    plain = text.replace("_", "")
    n = _go_int(plain)
    if n is not None:
        return n
    if _rx("_YAML_STYLE_FLOAT").match(plain):
        f = _go_float(plain)
        if f is not None:
            return f
    return text


def float32(x: float) -> float:
    """x rounded to the nearest float32, as Go's float32(x) conversion (the one such helper: YAML's
    float32 text here, kubelet's threshold percentages in :mod:`sdqos.kube.thresholds`)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def go_float_text(f: float, bits: int = 64) -> str:
    """strconv.FormatFloat(f, 'g', -1, bits) — the shortest digits that read back as the same
    float32 (or float64), in %e form when the exponent is < -4 or >= 6 — with go-yaml's spelling of
    the infinities and NaN."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    if bits == 32:
        target = float32(f)
        text = next(t for t in (f"{abs(target):.{p}e}" for p in range(0, 9)) if float32(float(t)) == abs(target))
    else:
        text = f"{abs(f):.17e}"
        text = next(t for t in (f"{abs(f):.{p}e}" for p in range(0, 17)) if float(t) == abs(f))
    mant, _, exp = text.partition("e")
    digits = mant.replace(".", "").rstrip("0") or "0"
    dp = int(exp) + 1  # the decimal point's position after the first digit
    sign = "-" if f < 0 else ""
    x = dp - 1
    if x < -4 or x >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return f"{sign}{digits[:dp]}.{digits[dp:]}"
