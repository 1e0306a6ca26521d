"""Kubernetes resource quantities ("500m", "1Gi", "2.5e3"), parsed exactly as Kubernetes does.

Why: sdqos derives cgroup settings from pod requests and limits the way kubelet does, and
kubelet reads them through apimachinery's resource.Quantity. That type is a decimal
fixed-point number with its own grammar, rounding (up, to 10^-9) and printing rules. A
float-based or "close enough" parser would compute different numbers for inputs like
``0.1m``, ``3.001n`` or ``1.5Ki`` and would accept or refuse different strings. This module
re-implements the type with Python ints. It is pure: no I/O, no floats for values.

It follows apimachinery eed236ce (pkg/api/resource), quirks included. A few odd strings
parse as zero: ``"."``, ``"-"`` and a bare ``"Ki"``. ``str()`` echoes an input that looks
canonical (``"+1"`` and ``"1.G"`` print as written). A power of ten with no SI suffix prints
bare (``1000E`` prints ``1``). Exponents are truncated to int32 (``1e4294967296`` is 1).

Deliberate differences, all where upstream overflows or hangs:

* ``value()``, ``milli_value()`` and ``scaled_value()`` are exact ints and never wrap. A
  negative value always rounds away from zero, as on upstream's int64 path.
* Decimal values of 10^1000 or more are refused (QuantityError), and so are scales outside
  +-1000. Upstream takes any size, and it hangs on large enough exponents.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import re
from typing import TYPE_CHECKING, TypeGuard

from sdqos.errors import QuantityError

if TYPE_CHECKING:  # imported where used: fractions pulls in decimal, ~10 M instructions a sync
    from fractions import Fraction

__all__ = ["Format", "Quantity", "QuantityError", "parse_quantity", "MAX_INT64"]

MAX_INT64 = (1 << 63) - 1
_MAX_UINT64 = (1 << 64) - 1
_MIN_INT64 = -(1 << 63)

# Decimal values must stay below 10**_LIMIT. Scales passed in by callers must lie within
# +-_LIMIT. These limits keep all the integer arithmetic small (see module docstring).
_LIMIT = 1000


class Format(str, enum.Enum):
    """How a quantity is written. Parsing keeps the form of the input; printing reuses it."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi (12 * 2**20)
    DECIMAL_SI = "DecimalSI"  # 12M (12 * 10**6)

    def __str__(self) -> str:
        return self.value


_DEXP = Format.DECIMAL_EXPONENT
_BIN = Format.BINARY_SI
_DSI = Format.DECIMAL_SI
_FORMATS = {f.value: f for f in Format}  # Format("BinarySI") through Enum's machinery is ~5 µs

# suffix -> (power of two, power of ten, format)
_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "": (0, 0, _DSI),
    "n": (0, -9, _DSI),
    "u": (0, -6, _DSI),
    "m": (0, -3, _DSI),
    "k": (0, 3, _DSI),
    "M": (0, 6, _DSI),
    "G": (0, 9, _DSI),
    "T": (0, 12, _DSI),
    "P": (0, 15, _DSI),
    "E": (0, 18, _DSI),
    "Ki": (10, 0, _BIN),
    "Mi": (20, 0, _BIN),
    "Gi": (30, 0, _BIN),
    "Ti": (40, 0, _BIN),
    "Pi": (50, 0, _BIN),
    "Ei": (60, 0, _BIN),
}
# Printing: power of ten -> DecimalSI suffix, power of 1024 -> BinarySI suffix. Upstream
# prints no suffix at all for a power missing from these tables; so do we.
_DEC_SUFFIX = {e: s for s, (b, e, f) in _SUFFIXES.items() if f is _DSI}
_BIN_SUFFIX = {b // 10: s for s, (b, e, f) in _SUFFIXES.items() if f is _BIN}

# Sign, leading zeros, integer digits, optional fraction, then the suffix. A string
# matches exactly when upstream's scanner accepts it, and the groups split it the same way.
_QUANTITY_RE = re.compile(r"([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_GO_INT_RE = re.compile(r"([+-]?)([0-9]+)")  # strconv.ParseInt(s, 10, 64) syntax

_POW10 = [10**i for i in range(64)]
_TOO_BIG = 10**_LIMIT


def _p10(n: int) -> int:
    """10**n for n >= 0, from a table for the common small powers."""
    return _POW10[n] if n < 64 else 10**n


def _shown(text: str) -> str:
    """The input quoted for an error message, shortened if long."""
    if len(text) > 40:
        text = text[:37] + "..."
    return json.dumps(text, ensure_ascii=False)


def _not_a_quantity(text: str, why: str = "") -> QuantityError:
    """The error for a string that is not a quantity."""
    return QuantityError(f"{_shown(text)} is not a quantity" + (f" ({why})" if why else ""))


# --- the value type --------------------------------------------------------------------------


class Quantity:
    """A Kubernetes resource quantity: an exact decimal with a remembered Format.

    The value is ``mantissa * 10**exponent``. Instances are immutable. They compare and hash
    by value, so ``1000m == 1`` and ``1Gi == 1024Mi``. They also compare with plain ints.
    ``Quantity(value, scale=0, format=DECIMAL_SI)`` is ``value * 10**scale``. It plays the
    role of upstream's NewQuantity, NewMilliQuantity (scale=-3) and NewScaledQuantity.
    """

    __slots__ = ("_u", "_e", "_fmt", "_s", "_h")

    def __init__(self, value: int = 0, scale: int = 0, format: Format | str = _DSI):
        if not _is_int(value) or not _is_int(scale):
            raise TypeError("Quantity(value, scale) takes integers")
        _check_scale(scale)
        if abs(value) >= _TOO_BIG:
            raise QuantityError(f"{value} is too large for a quantity")
        self._u = value
        self._e = scale
        self._fmt = format if format.__class__ is Format else _FORMATS.get(format) or Format(format)
        self._s: str | None = None
        self._h: int | None = None

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse a quantity string exactly as upstream ParseQuantity does.

        No whitespace is allowed. Raises QuantityError.
        """
        if not isinstance(text, str):
            raise QuantityError(f"{text!r} is not a quantity (not a string)")
        return _parse_text(text)

    # -- accessors ---------------------------------------------------------------------------

    @property
    def format(self) -> Format:
        """The Format remembered from parsing (or given to the constructor)."""
        return self._fmt

    def is_zero(self) -> bool:
        """True if the value is zero."""
        return self._u == 0

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._u > 0) - (self._u < 0)

    def as_fraction(self) -> Fraction:
        """The exact value as a Fraction."""
        from fractions import Fraction

        if self._e >= 0:
            return Fraction(self._u * _p10(self._e))
        return Fraction(self._u, _p10(-self._e))

    def scaled_value(self, scale: int = 0) -> int:
        """The value in units of 10**scale, rounded up: ceil(q / 10**scale).

        A negative value is rounded away from zero, like upstream's int64 path. The result
        is exact, even where upstream's int64 would overflow.
        """
        _check_scale(scale)
        return _round_away(self._u, self._e - scale)

    def value(self) -> int:
        """ceil(q): whole units (cores, bytes), rounded up."""
        return _round_away(self._u, self._e)

    def milli_value(self) -> int:
        """ceil(q * 1000): thousandths (milli-CPU), rounded up."""
        return _round_away(self._u, self._e + 3)

    def round_up(self, scale: int) -> tuple[Quantity, bool]:
        """Round to a multiple of 10**scale, away from zero (upstream RoundUp).

        Returns the rounded quantity and whether no precision was lost.
        """
        _check_scale(scale)
        if self._e >= scale:
            return self, True
        u = self._u
        shift = scale - self._e
        if shift >= abs(u).bit_length():  # |u| < 10**shift: what is left is 0 or +-1
            q, r = (1 if u else 0), abs(u)
        else:
            q, r = divmod(abs(u), _p10(shift))
            q += r != 0
        return _new(-q if u < 0 else q, scale, self._fmt), r == 0

    # -- printing ----------------------------------------------------------------------------

    def __str__(self) -> str:
        s = self._s
        if s is None:
            s = self._s = _canonical(self._u, self._e, self._fmt)
        return s

    def __repr__(self) -> str:
        return f"<Quantity {self} {self._fmt.value}>"

    # -- comparison --------------------------------------------------------------------------

    def _cmp(self, other: object) -> int | None:
        """Compare with a Quantity or an int: -1, 0, 1, or None if other is neither."""
        if isinstance(other, Quantity):
            return _cmp(self._u, self._e, other._u, other._e)
        if _is_int(other):
            return _cmp(self._u, self._e, other, 0)
        return None

    def __eq__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c == 0

    def __lt__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c < 0

    def __le__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c <= 0

    def __gt__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c > 0

    def __ge__(self, other: object) -> bool:
        c = self._cmp(other)
        return NotImplemented if c is None else c >= 0

    def __hash__(self) -> int:
        h = self._h
        if h is None:
            h = self._h = hash(self.as_fraction())  # equal to hash(int) for whole values
        return h

    # -- arithmetic (for summing requests) ---------------------------------------------------

    def __neg__(self) -> Quantity:
        return _new(-self._u, self._e, self._fmt)

    def __pos__(self) -> Quantity:
        return self

    def __add__(self, other: object) -> Quantity:
        other = _operand(other)
        if other is None:
            return NotImplemented
        return _add(self, other._u, other._e, other._fmt)

    def __radd__(self, other: object) -> Quantity:
        left = _operand(other)
        if left is None:
            return NotImplemented
        return _add(left, self._u, self._e, self._fmt)

    def __sub__(self, other: object) -> Quantity:
        other = _operand(other)
        if other is None:
            return NotImplemented
        return _add(self, -other._u, other._e, other._fmt)

    def __rsub__(self, other: object) -> Quantity:
        left = _operand(other)
        if left is None:
            return NotImplemented
        return _add(left, -self._u, self._e, self._fmt)


def _new(u: int, e: int, fmt: Format, s: str | None = None) -> Quantity:
    """Build a Quantity without argument checks (internal use)."""
    q = object.__new__(Quantity)
    q._u = u
    q._e = e
    q._fmt = fmt
    q._s = s
    q._h = None
    return q


def _is_int(x: object) -> TypeGuard[int]:
    """An int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def _check_scale(scale: int) -> None:
    """Refuse scales that would need powers of ten with thousands of digits."""
    if not _is_int(scale):
        raise TypeError("scale must be an int")
    if not -_LIMIT <= scale <= _LIMIT:
        raise QuantityError(f"scale {scale} is out of range (-{_LIMIT}..{_LIMIT})")


def _operand(x: object) -> Quantity | None:
    """Turn the other side of + or - into a Quantity (ints are DecimalSI), or None."""
    if isinstance(x, Quantity):
        return x
    if _is_int(x):
        return _new(x, 0, _DSI)
    return None


def _add(left: Quantity, u: int, e: int, fmt: Format) -> Quantity:
    """left + u*10**e. Like upstream Add and Sub, a zero left side takes the other format."""
    out_fmt = fmt if left._u == 0 else left._fmt
    lu, le = left._u, left._e
    if le > e:
        lu, le = lu * _p10(le - e), e
    elif e > le:
        u = u * _p10(e - le)
    return _new(lu + u, le, out_fmt)


def _cmp(u1: int, e1: int, u2: int, e2: int) -> int:
    """Compare u1*10**e1 with u2*10**e2."""
    if e1 > e2:
        u1 *= _p10(e1 - e2)
    elif e2 > e1:
        u2 *= _p10(e2 - e1)
    return (u1 > u2) - (u1 < u2)


def _round_away(u: int, shift: int) -> int:
    """u * 10**shift as an int, rounded away from zero when shift is negative."""
    if shift >= 0:
        return u * _p10(shift)
    a = abs(u)
    if -shift >= a.bit_length():  # a < 10**-shift
        q = 1 if a else 0
    else:
        q, r = divmod(a, _p10(-shift))
        q += r != 0
    return -q if u < 0 else q


# --- printing --------------------------------------------------------------------------------


def _canonical(u: int, e: int, fmt: Format) -> str:
    """Upstream CanonicalizeBytes: largest exponent (a multiple of 3, or of 1024) that loses
    nothing, with the format's suffix. BinarySI falls back to DecimalSI for values with
    |v| < 1024 and for non-integers."""
    if u == 0:
        return "0"
    sign = "-" if u < 0 else ""
    a = abs(u)
    if fmt is _BIN:
        if e >= 0:
            whole = a * _p10(e)
        else:
            whole, rest = divmod(a, _p10(-e))
            if rest:
                whole = 0  # not an integer: print as DecimalSI
        if whole >= 1024:
            power = 0
            while whole % 1024 == 0:
                whole //= 1024
                power += 1
            return f"{sign}{whole}{_BIN_SUFFIX.get(power, '')}"
        fmt = _DSI
    digits = str(a)
    mantissa = digits.rstrip("0")
    e += len(digits) - len(mantissa)
    pad = e % 3
    e -= pad
    mantissa += "0" * pad
    if fmt is _DSI:
        return f"{sign}{mantissa}{_DEC_SUFFIX.get(e, '')}"
    return f"{sign}{mantissa}e{e}" if e else f"{sign}{mantissa}"


# --- parsing ---------------------------------------------------------------------------------


def _exponent_suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    """Interpret an ``e<int>``/``E<int>`` suffix. As upstream does, read the exponent as
    an int64 and then truncate it to int32."""
    m = _GO_INT_RE.fullmatch(suffix, 1) if suffix[:1] in ("e", "E") else None
    if m is not None:
        body = m.group(2).lstrip("0")
        if len(body) <= 19:
            n = int(body or "0")
            if m.group(1) == "-":
                n = -n
            if _MIN_INT64 <= n <= MAX_INT64:
                return 0, ((n + (1 << 31)) & 0xFFFFFFFF) - (1 << 31), _DEXP
    raise _not_a_quantity(text, f"unknown suffix {_shown(suffix)}")


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    """ParseQuantity. Cached: quantities are immutable, and configs repeat the same values."""
    if text == "0":
        return _new(0, 0, _DSI, "0")
    if not text:
        raise _not_a_quantity(text, "empty")
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise _not_a_quantity(text)
    sign, zeros, num_raw, denom, suffix = m.groups()
    rule = _SUFFIXES.get(suffix)
    bexp, dexp, fmt = _exponent_suffix(text, suffix) if rule is None else rule
    num = num_raw or "0"
    denom = denom or ""
    negative = sign == "-"

    # Upstream's int64 fast path. Which path a value takes changes only whether the input
    # string is kept for printing. The values and formats come out the same on either path.
    if bexp:
        precision = -1 if denom else 14 - len(num) - 3 * (bexp // 10)
    else:
        precision = 18 - len(num) - len(denom)
    if precision >= 0:
        scale = dexp - len(denom)
        if scale >= -9:
            digits = num + denom
            whole = int(digits)
            v = whole << bexp
            if v <= MAX_INT64:
                if scale > _LIMIT - 18:
                    _check_magnitude(text, digits, scale)
                if bexp:
                    keep = whole & 7 != 0
                else:
                    keep = scale % 3 == 0 and digits[0] != "0" and not digits.endswith("000")
                return _new(-v if negative else v, scale, fmt, text if keep else None)

    if not (zeros or num_raw or denom):
        raise _not_a_quantity(text)  # e.g. "-e-20": no digit at all
    u, e, fmt = _exact_value(text, num, denom, bexp, dexp, fmt)
    return _new(-u if negative else u, e, fmt)


def _check_magnitude(text: str, digits: str, exponent: int) -> None:
    """Refuse a decimal value int(digits) * 10**exponent of 10**_LIMIT or more."""
    significant = len(digits.lstrip("0"))
    if significant and significant + exponent > _LIMIT:
        raise _not_a_quantity(text, "too large")


def _exact_value(
    text: str, num: str, denom: str, bexp: int, dexp: int, fmt: Format
) -> tuple[int, int, Format]:
    """Upstream's inf.Dec path for a non-negative number ``num.denom * 2**bexp * 10**dexp``.

    Returns the value as (mantissa, exponent) rounded up to 10**-9, capped at 2**63-1 if
    BinarySI, and the format (BinarySI below 1 becomes DecimalSI).
    """
    digits = (num + denom).lstrip("0")
    if not digits:
        return 0, 0, fmt
    exp10 = dexp - len(denom)  # value = int(digits) * 2**bexp * 10**exp10
    if bexp:
        if len(num) > 20:  # at least 10**20 * 1024: over the cap
            return MAX_INT64, 0, fmt
    else:
        _check_magnitude(text, digits, exp10)
    drop = -(exp10 + 9)  # decimal places beyond nano
    if drop <= 0:
        u, e = int(digits) << bexp, exp10
    elif drop >= bexp:
        # ceil(int(digits) * 2**bexp / 10**drop). 10**(drop - bexp) divides 10**drop/2**bexp,
        # so the last drop - bexp digits only count as "something more than zero".
        cut = len(digits) - (drop - bexp)
        head = int(digits[:cut]) if cut > 0 else 0
        sticky = digits[max(cut, 0) :].strip("0") != ""
        u, e = -(-(head + sticky) // 5**bexp), -9
    else:
        u, e = -(-(int(digits) << bexp) // _p10(drop)), -9
    if bexp:
        if _cmp(u, e, MAX_INT64, 0) > 0:
            return MAX_INT64, 0, fmt
        if e < 0 and u < _p10(-e):  # in (0, 1)
            fmt = _DSI
    return u, e, fmt


# --- values from YAML ------------------------------------------------------------------------


def parse_quantity(value: object) -> Quantity:
    """A Quantity from a value a YAML loader produced.

    ``str`` is parsed as-is. ``int`` and ``float`` are first written the way kubectl's
    YAML-to-JSON step and Go's encoding/json would write them, and that text is parsed,
    as Quantity.UnmarshalJSON would. So ``0.5`` gives "0.5", ``2`` gives "2" and ``1.0e+3``
    gives "1000". A Quantity is returned unchanged. Anything else (bool, None, lists,
    dicts, NaN, infinities) raises QuantityError.
    """
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, Quantity):
        return value
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{json.dumps(value)} is not a quantity")
    if isinstance(value, int):
        return _parse_text(_json_int(value))
    if isinstance(value, float):
        return _parse_text(_json_float(value))
    raise QuantityError(f"a {type(value).__name__} is not a quantity")


def _json_int(n: int) -> str:
    """The JSON text for a YAML integer. Like go-yaml, integers that fit neither int64 nor
    uint64 become floats."""
    if _MIN_INT64 <= n <= _MAX_UINT64:
        return str(n)
    try:
        return _json_float(float(n))
    except OverflowError:
        raise QuantityError(f"{n} is not a quantity (too large)") from None


def _json_float(f: float) -> str:
    """Go encoding/json's text for a float64: the shortest round-trip digits, in plain
    notation for 1e-6 <= |f| < 1e21 and in exponent notation (``1e+21``, ``1e-7``) otherwise."""
    if not math.isfinite(f):
        raise QuantityError(f"{f} is not a quantity")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    mantissa, _, exp = repr(abs(f)).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    digits = raw.lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + (int(exp) if exp else 0) - (len(raw) - len(digits))
    digits = digits.rstrip("0")
    if 1e-6 <= abs(f) < 1e21:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    e = point - 1
    body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{body}e{'-' if e < 0 else '+'}{abs(e):02d}".replace("e-0", "e-")
