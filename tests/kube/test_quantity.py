"""Tests for sdqos.kube.quantity.

Most tables below are transcribed from k8s.io/apimachinery pkg/api/resource/quantity_test.go
at commit eed236ceee2c19c2753a3d93ac0631dc20750454. That file last changed in 02f7088a48902f.
Each table names the upstream test function it comes from.
Upstream builds expected values with decQuantity(mantissa, exponent, format). Here
that is ``(mantissa, exponent, format)`` and the value is mantissa * 10**exponent.

Tables marked "upstream code" were not in the upstream test file. They were produced by
running the upstream Go code (same commit) on each input.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from sdqos.errors import QuantityError
from sdqos.kube.quantity import MAX_INT64, Format, Quantity, parse_quantity

D = Format.DECIMAL_SI
B = Format.BINARY_SI
X = Format.DECIMAL_EXPONENT
MOST_NEGATIVE = -(1 << 63)


def val(mantissa: int, exponent: int) -> Fraction:
    """The value of upstream's decQuantity(mantissa, exponent, _)."""
    return Fraction(mantissa) * Fraction(10) ** exponent


def parse(text: str) -> Quantity:
    return Quantity.parse(text)


# --- TestQuantityParse (upstream): input -> value, format ------------------------------------

PARSE_TABLE = [
    ("0", 0, 0, D),
    ("0n", 0, 0, D),
    ("0u", 0, 0, D),
    ("0m", 0, 0, D),
    ("0Ki", 0, 0, B),
    ("0k", 0, 0, D),
    ("0Mi", 0, 0, B),
    ("0M", 0, 0, D),
    ("0Gi", 0, 0, B),
    ("0G", 0, 0, D),
    ("0Ti", 0, 0, B),
    ("0T", 0, 0, D),
    # Quantity less numbers are allowed
    ("1", 1, 0, D),
    # Binary suffixes
    ("1Ki", 1024, 0, B),
    ("8Ki", 8 * 1024, 0, B),
    ("7Mi", 7 * 1024 * 1024, 0, B),
    ("6Gi", 6 * 1024 * 1024 * 1024, 0, B),
    ("5Ti", 5 * 1024 * 1024 * 1024 * 1024, 0, B),
    ("4Pi", 4 * 1024 * 1024 * 1024 * 1024 * 1024, 0, B),
    ("3Ei", 3 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, 0, B),
    ("10Ti", 10 * 1024 * 1024 * 1024 * 1024, 0, B),
    ("100Ti", 100 * 1024 * 1024 * 1024 * 1024, 0, B),
    # Decimal suffixes
    ("5n", 5, -9, D),
    ("4u", 4, -6, D),
    ("3m", 3, -3, D),
    ("9", 9, 0, D),
    ("8k", 8, 3, D),
    ("50k", 5, 4, D),
    ("7M", 7, 6, D),
    ("6G", 6, 9, D),
    ("5T", 5, 12, D),
    ("40T", 4, 13, D),
    ("300T", 3, 14, D),
    ("2P", 2, 15, D),
    ("1E", 1, 18, D),
    # Decimal exponents
    ("1E-3", 1, -3, X),
    ("1e3", 1, 3, X),
    ("1E6", 1, 6, X),
    ("1e9", 1, 9, X),
    ("1E12", 1, 12, X),
    ("1e15", 1, 15, X),
    ("1E18", 1, 18, X),
    # Nonstandard but still parsable
    ("1e14", 1, 14, X),
    ("1e13", 1, 13, X),
    ("1e3", 1, 3, X),
    ("100.035k", 100035, 0, D),
    # Things that look like floating point
    ("0.001", 1, -3, D),
    ("0.0005k", 5, -1, D),
    ("0.005", 5, -3, D),
    ("0.05", 5, -2, D),
    ("0.5", 5, -1, D),
    ("0.00050k", 5, -1, D),
    ("0.00500", 5, -3, D),
    ("0.05000", 5, -2, D),
    ("0.50000", 5, -1, D),
    ("0.5e0", 5, -1, X),
    ("0.5e-1", 5, -2, X),
    ("0.5e-2", 5, -3, X),
    ("0.5e0", 5, -1, X),
    ("10.035M", 10035, 3, D),
    ("1.2e3", 12, 2, X),
    ("1.3E+6", 13, 5, X),
    ("1.40e9", 14, 8, X),
    ("1.53E12", 153, 10, X),
    ("1.6e15", 16, 14, X),
    ("1.7E18", 17, 17, X),
    ("9.01", 901, -2, D),
    ("8.1k", 81, 2, D),
    ("7.123456M", 7123456, 0, D),
    ("6.987654321G", 6987654321, 0, D),
    ("5.444T", 5444, 9, D),
    ("40.1T", 401, 11, D),
    ("300.2T", 3002, 11, D),
    ("2.5P", 25, 14, D),
    ("1.01E", 101, 16, D),
    # Things that saturate/round
    ("3.001n", 4, -9, D),
    ("1.1E-9", 2, -9, X),
    ("0.0000000001", 1, -9, D),
    ("0.0000000005", 1, -9, D),
    ("0.00000000050", 1, -9, D),
    ("0.5e-9", 1, -9, X),
    ("0.9n", 1, -9, D),
    ("0.00000012345", 124, -9, D),
    ("0.00000012354", 124, -9, D),
    ("9Ei", MAX_INT64, 0, B),
    ("9223372036854775807Ki", MAX_INT64, 0, B),
    ("12E", 12, 18, D),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", 10243584, -2, B),
    ("0.5Mi", 512 * 1024, 0, B),
    ("0.05Gi", 536870912, -1, B),
    ("0.025Ti", 274877906944, -1, B),
    # Things written by trolls
    ("0.000000000001Ki", 2, -9, D),  # rounds up, changes format
    (".001", 1, -3, D),
    (".0001k", 100, -3, D),
    ("1.", 1, 0, D),
    ("1.G", 1, 9, D),
]


@pytest.mark.parametrize("text,mantissa,exponent,fmt", PARSE_TABLE)
def test_parse(text, mantissa, exponent, fmt):
    q = parse(text)
    assert q.as_fraction() == val(mantissa, exponent)
    assert q.format is fmt


@pytest.mark.parametrize("text,mantissa,exponent,fmt", PARSE_TABLE)
def test_parse_negative(text, mantissa, exponent, fmt):
    q = parse("-" + text)
    assert q.as_fraction() == -val(mantissa, exponent)
    assert q.format is fmt


@pytest.mark.parametrize("text,mantissa,exponent,fmt", PARSE_TABLE)
def test_parse_explicit_plus(text, mantissa, exponent, fmt):
    q = parse("+" + text)
    assert q.as_fraction() == val(mantissa, exponent)
    assert q.format is fmt


# TestQuantityParse (upstream): the invalid list, and the empty string.
INVALID = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-"]
INVALID += [" 1", "1 "]  # trailing whitespace is forbidden
# TestQuantityParseNonNumericPanic, TestQuantityValueSet (upstream).
INVALID += ["Non-Numeric", "invalid"]
# More strings the upstream code refuses (upstream code).
INVALID += [
    "-e-20",  # no digit at all where upstream needs one
    "e-20",
    ".e-20",
    "1e9223372036854775808",  # exponent beyond int64
    "1e",
    "1e+",
    "1ee3",
    "1Kii",
    "1K",
    "1k ",
    "\uff11",  # a non-ASCII digit
    "1_000",
    "0x10",
    "1.5.5",
    "--1",
    "+-1",
    "1\n",
    "\t1",
    "1 Gi",
    "1gi",
    "1KI",
]


@pytest.mark.parametrize("text", INVALID)
def test_parse_invalid(text):
    with pytest.raises(QuantityError):
        parse(text)


def test_error_message_is_short_and_names_the_input():
    with pytest.raises(QuantityError) as err:
        parse("12x")
    assert str(err.value) == '"12x" is not a quantity'
    with pytest.raises(QuantityError) as err:
        parse("0.1mi")
    assert str(err.value) == '"0.1mi" is not a quantity (unknown suffix "mi")'


def test_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse("1.1.M")


def test_parse_rejects_non_strings():
    with pytest.raises(QuantityError):
        Quantity.parse(5)  # type: ignore[arg-type]


# TestQuantityParseZero (upstream)
def test_parse_zero_prints_zero():
    assert str(parse("0")) == "0"


# --- TestQuantityString (upstream) ------------------------------------------------------------
# (mantissa, exponent, format) -> String(), and an alternate spelling that must print the same.

STRING_TABLE = [
    (1024 * 1024 * 1024, 0, B, "1Gi", "1024Mi"),
    (300 * 1024 * 1024, 0, B, "300Mi", "307200Ki"),
    (6 * 1024, 0, B, "6Ki", None),
    (1001 * 1024 * 1024 * 1024, 0, B, "1001Gi", "1025024Mi"),
    (1024 * 1024 * 1024 * 1024, 0, B, "1Ti", "1024Gi"),
    (5, 0, B, "5", "5000m"),
    (500, -3, B, "500m", "0.5"),
    (1, 9, D, "1G", "1000M"),
    (1000, 6, D, "1G", "0.001T"),
    (1000000, 3, D, "1G", None),
    (1000000000, 0, D, "1G", None),
    (1, -3, D, "1m", "1000u"),
    (80, -3, D, "80m", None),
    (1080, -3, D, "1080m", "1.08"),
    (108, -2, D, "1080m", "1080000000n"),
    (10800, -4, D, "1080m", None),
    (300, 6, D, "300M", None),
    (1, 12, D, "1T", None),
    (1234567, 6, D, "1234567M", None),
    (1234567, -3, B, "1234567m", None),
    (3, 3, D, "3k", None),
    (1025, 0, B, "1025", None),
    (0, 0, D, "0", None),
    (0, 0, B, "0", None),
    (1, 9, X, "1e9", ".001e12"),
    (1, -3, X, "1e-3", "0.001e0"),
    (1, -9, X, "1e-9", "1000e-12"),
    (80, -3, X, "80e-3", None),
    (300, 6, X, "300e6", None),
    (1, 12, X, "1e12", None),
    (1, 3, X, "1e3", None),
    (3, 3, X, "3e3", None),
    (3, 3, D, "3k", None),
    (0, 0, X, "0", "00"),
    (1, -9, D, "1n", None),
    (80, -9, D, "80n", None),
    (1080, -9, D, "1080n", None),
    (108, -8, D, "1080n", None),
    (10800, -10, D, "1080n", None),
    (1, -6, D, "1u", None),
    (80, -6, D, "80u", None),
    (1080, -6, D, "1080u", None),
]


@pytest.mark.parametrize("mantissa,exponent,fmt,expect,alternate", STRING_TABLE)
def test_string(mantissa, exponent, fmt, expect, alternate):
    assert str(Quantity(mantissa, exponent, fmt)) == expect
    assert str(parse(expect)) == expect
    if alternate is not None:
        assert str(parse(alternate)) == expect
    if mantissa:
        # upstream never prints "-0"; every other value prints with a leading "-"
        assert str(-Quantity(mantissa, exponent, fmt)) == "-" + expect
        assert str(Quantity(-mantissa, exponent, fmt)) == "-" + expect


# --- TestQuantityParseEmit (upstream) ---------------------------------------------------------

PARSE_EMIT_TABLE = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]


@pytest.mark.parametrize("text,expect", PARSE_EMIT_TABLE)
def test_parse_emit(text, expect):
    assert str(parse(text)) == expect
    assert str(parse("-" + text)) == "-" + expect


# --- TestParseQuantity (upstream): int64 and decimal boundaries -------------------------------
# input -> exact value (upstream's wantAsDec), canonical string (None: the input itself).
# Upstream also checks AsInt64(), which this module does not have.

BOUNDARY_TABLE = [
    # min/max 18 digits
    ("-999999999999999999", "-999999999999999999", None),
    ("999999999999999999", "999999999999999999", None),
    # .0
    ("-999999999999999999.0", "-999999999999999999", "-999999999999999999"),
    ("999999999999999999.0", "999999999999999999", "999999999999999999"),
    # .1
    ("-999999999999999999.1", "-999999999999999999.1", "-999999999999999999100m"),
    ("999999999999999999.1", "999999999999999999.1", "999999999999999999100m"),
    # min/max 19 digits
    ("-9999999999999999999", "-9999999999999999999", None),
    ("9999999999999999999", "9999999999999999999", None),
    ("-1E", "-1000000000000000000", None),
    ("1E", "1000000000000000000", None),
    ("-1000000000000000000", "-1000000000000000000", "-1E"),
    ("1000000000000000000", "1000000000000000000", "1E"),
    # .0
    ("-9999999999999999999.0", "-9999999999999999999", "-9999999999999999999"),
    ("9999999999999999999.0", "9999999999999999999", "9999999999999999999"),
    ("-1.0E", "-1000000000000000000", "-1E"),
    ("1.0E", "1000000000000000000", "1E"),
    ("-1000000000000000000.0", "-1000000000000000000", "-1E"),
    ("1000000000000000000.0", "1000000000000000000", "1E"),
    # 000m
    ("-9999999999999999999000m", "-9999999999999999999", "-9999999999999999999"),
    ("9999999999999999999000m", "9999999999999999999", "9999999999999999999"),
    # .1
    ("-9999999999999999999.1", "-9999999999999999999.1", "-9999999999999999999100m"),
    ("9999999999999999999.1", "9999999999999999999.1", "9999999999999999999100m"),
    ("-1.0000000000000000001E", "-1000000000000000000.1", "-1000000000000000000100m"),
    ("1.0000000000000000001E", "1000000000000000000.1", "1000000000000000000100m"),
    ("-1000000000000000000.1", "-1000000000000000000.1", "-1000000000000000000100m"),
    ("1000000000000000000.1", "1000000000000000000.1", "1000000000000000000100m"),
    # +1
    ("-1.000000000000000001E", "-1000000000000000001", "-1000000000000000001"),
    ("1.000000000000000001E", "1000000000000000001", "1000000000000000001"),
    ("-1000000000000000001", "-1000000000000000001", None),
    ("1000000000000000001", "1000000000000000001", None),
    # min/max 20 digits
    ("-10E", "-10000000000000000000", None),
    ("10E", "10000000000000000000", None),
    ("-10000000000000000000", "-10000000000000000000", "-10E"),
    ("10000000000000000000", "10000000000000000000", "10E"),
    # .0
    ("-10.0E", "-10000000000000000000", "-10E"),
    ("10.0E", "10000000000000000000", "10E"),
    ("-10000000000000000000.0", "-10000000000000000000", "-10E"),
    ("10000000000000000000.0", "10000000000000000000", "10E"),
    # 000m
    ("-10000000000000000000000m", "-10000000000000000000", "-10E"),
    ("10000000000000000000000m", "10000000000000000000", "10E"),
    # .1
    ("-10.0000000000000000001E", "-10000000000000000000.1", "-10000000000000000000100m"),
    ("10.0000000000000000001E", "10000000000000000000.1", "10000000000000000000100m"),
    ("-10000000000000000000.1", "-10000000000000000000.1", "-10000000000000000000100m"),
    ("10000000000000000000.1", "10000000000000000000.1", "10000000000000000000100m"),
    # +1
    ("-10.000000000000000001E", "-10000000000000000001", "-10000000000000000001"),
    ("10.000000000000000001E", "10000000000000000001", "10000000000000000001"),
    ("-10000000000000000001", "-10000000000000000001", None),
    ("10000000000000000001", "10000000000000000001", None),
    # min/max int64 - 1
    ("-9223372036854775809", "-9223372036854775809", None),
    ("9223372036854775806", "9223372036854775806", None),
    # .0
    ("-9223372036854775809.0", "-9223372036854775809", "-9223372036854775809"),
    ("9223372036854775806.0", "9223372036854775806", "9223372036854775806"),
    # 000m
    ("-9223372036854775809000m", "-9223372036854775809", "-9223372036854775809"),
    ("9223372036854775806000m", "9223372036854775806", "9223372036854775806"),
    # .1
    ("-9223372036854775809.1", "-9223372036854775809.1", "-9223372036854775809100m"),
    ("9223372036854775806.1", "9223372036854775806.1", "9223372036854775806100m"),
    # min/max int64
    ("-9223372036854775808", "-9223372036854775808", None),
    ("9223372036854775807", "9223372036854775807", None),
    # .0
    ("-9223372036854775808.0", "-9223372036854775808", "-9223372036854775808"),
    ("9223372036854775807.0", "9223372036854775807", "9223372036854775807"),
    # 000m
    ("-9223372036854775808000m", "-9223372036854775808", "-9223372036854775808"),
    ("9223372036854775807000m", "9223372036854775807", "9223372036854775807"),
    # .1
    ("-9223372036854775808.1", "-9223372036854775808.1", "-9223372036854775808100m"),
    ("9223372036854775807.1", "9223372036854775807.1", "9223372036854775807100m"),
    # min/max int64 + 1
    ("-9223372036854775807", "-9223372036854775807", None),
    ("9223372036854775808", "9223372036854775808", None),
    # .0
    ("-9223372036854775807.0", "-9223372036854775807", "-9223372036854775807"),
    ("9223372036854775808.0", "9223372036854775808", "9223372036854775808"),
    # 000m
    ("-9223372036854775807000m", "-9223372036854775807", "-9223372036854775807"),
    ("9223372036854775808000m", "9223372036854775808", "9223372036854775808"),
    # .1
    ("-9223372036854775807.1", "-9223372036854775807.1", "-9223372036854775807100m"),
    ("9223372036854775808.1", "9223372036854775808.1", "9223372036854775808100m"),
]


@pytest.mark.parametrize("text,exact,canonical", BOUNDARY_TABLE)
def test_parse_boundaries(text, exact, canonical):
    q = parse(text)
    assert q.as_fraction() == Fraction(exact)
    assert str(q) == (canonical or text)


# --- TestQuantityRoundUp (upstream) -----------------------------------------------------------

ROUND_UP_TABLE = [
    ("9.01", -3, (901, -2), True),
    ("9.01", -2, (901, -2), True),
    ("9.01", -1, (91, -1), False),
    ("9.01", 0, (10, 0), False),
    ("9.01", 1, (10, 0), False),
    ("9.01", 2, (100, 0), False),
    ("-9.01", -3, (-901, -2), True),
    ("-9.01", -2, (-901, -2), True),
    ("-9.01", -1, (-91, -1), False),
    ("-9.01", 0, (-10, 0), False),
    ("-9.01", 1, (-10, 0), False),
    ("-9.01", 2, (-100, 0), False),
]


@pytest.mark.parametrize("text,scale,expect,exact", ROUND_UP_TABLE)
def test_round_up(text, scale, expect, exact):
    rounded, ok = parse(text).round_up(scale)
    assert ok is exact
    assert rounded.as_fraction() == val(*expect)
    assert rounded.format is D


# --- comparisons ------------------------------------------------------------------------------

# TestQuantityCmp (upstream, first table)
CMP_STRINGS = [
    ("0", "0", 0),
    ("100m", "50m", 1),
    ("50m", "100m", -1),
    ("10000T", "100Gi", 1),
]


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


@pytest.mark.parametrize("x,y,expect", CMP_STRINGS)
def test_cmp_strings(x, y, expect):
    assert _cmp(parse(x), parse(y)) == expect
    assert _cmp(parse(y), parse(x)) == -expect
    assert (parse(x) == parse(y)) is (expect == 0)


# TestQuantityCmpInt64AndDec (upstream): intQuantity(value, scale) pairs.
CMP_SCALED = [
    ((901, -2), (901, -2), 0),
    ((90, -1), (901, -2), -1),
    ((901, -2), (900, -2), 1),
    ((0, 0), (0, 0), 0),
    ((0, 1), (0, -1), 0),
    ((0, -1), (0, 1), 0),
    ((800, -3), (1, 0), -1),
    ((800, -3), (79, -2), 1),
    ((MAX_INT64, 0), (1, -1), 1),
    ((MAX_INT64, 1), (1, 0), 1),
    ((MAX_INT64, 1), (1, 1), 1),
    ((MAX_INT64, 1), (0, 1), 1),
    ((MAX_INT64, -16), (1, 3), -1),
    ((MOST_NEGATIVE, 0), (0, 0), -1),
    ((MOST_NEGATIVE, -18), (-1, 0), -1),
    ((MOST_NEGATIVE, -19), (-1, 0), 1),
    ((1 * 1000000 * 1000000 * 1000000, -17), (1, 1), 0),
    ((1 * 1000000 * 1000000 * 1000000, -17), (-10, 0), 1),
    ((-1 * 1000000 * 1000000 * 1000000, -17), (-10, 0), 0),
    ((1 * 1000000 * 1000000 * 1000000, -17), (1, 0), 1),
    ((1 * 1000000 * 1000000 * 1000000 + 1, -17), (1, 1), 1),
    ((1 * 1000000 * 1000000 * 1000000 - 1, -17), (1, 1), -1),
]


@pytest.mark.parametrize("a,b,expect", CMP_SCALED)
def test_cmp_scaled(a, b, expect):
    qa, qb = Quantity(*a), Quantity(*b)
    assert _cmp(qa, qb) == expect
    assert _cmp(qb, qa) == -expect
    assert (qa == qb) is (expect == 0)
    assert (qa != qb) is (expect != 0)
    assert (qa <= qb) is (expect <= 0)
    assert (qa >= qb) is (expect >= 0)


# TestQuantityPtrEqual (upstream, the non-nil cases)
def test_equal():
    assert parse("100m") == parse("100m")
    assert parse("100m") != parse("200m")


EQUAL_VALUES = [
    ("1000m", "1"),
    ("1024Mi", "1Gi"),
    ("1Ki", "1024"),
    ("1e3", "1k"),
    ("0.5", "500m"),
    ("0", "0Gi"),
    ("-0", "0"),
    ("1.5Ki", "1536"),
]


@pytest.mark.parametrize("a,b", EQUAL_VALUES)
def test_equal_values_hash_alike(a, b):
    qa, qb = parse(a), parse(b)
    assert qa == qb
    assert hash(qa) == hash(qb)
    assert len({qa, qb}) == 1


def test_not_equal_across_formats():
    assert parse("1Ki") != parse("1k")
    assert parse("1001m") != parse("1")


def test_compare_with_int():
    assert parse("1000m") == 1
    assert hash(parse("1000m")) == hash(1)
    assert parse("1Ki") == 1024
    assert parse("1500m") > 1
    assert parse("1500m") < 2
    assert parse("-1") < 0
    assert parse("1") != 2
    assert 1 == parse("1000m")
    assert (parse("1") == True) is False  # noqa: E712 - bools are not numbers here
    assert parse("1") != "1"


def test_compare_with_other_types_is_an_error():
    with pytest.raises(TypeError):
        _ = parse("1") < "2"
    with pytest.raises(TypeError):
        _ = parse("1") < 1.5


def test_sorting_and_max():
    qs = [parse(s) for s in ["1Gi", "500Mi", "1G", "2", "100m"]]
    assert [str(q) for q in sorted(qs)] == ["100m", "2", "500Mi", "1G", "1Gi"]
    assert str(max(qs)) == "1Gi"


# --- zero and sign ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,zero,sign",
    [("0", True, 0), ("0Mi", True, 0), ("-0", True, 0), ("1n", False, 1), ("-1n", False, -1)],
)
def test_is_zero_and_sign(text, zero, sign):
    q = parse(text)
    assert q.is_zero() is zero
    assert q.sign() == sign


# --- Value / MilliValue / ScaledValue ---------------------------------------------------------

# TestScaledValue (upstream): NewScaledQuantity(1, from).ScaledValue(to)
SCALED_VALUE_TABLE = [
    (-9, -9, 1),
    (-9, -6, 1),
    (-9, -3, 1),
    (-9, 0, 1),
    (-6, -9, 1000),
    (-6, -6, 1),
    (-6, -3, 1),
    (-6, 0, 1),
    (-3, -9, 1000 * 1000),
    (-3, -6, 1000),
    (-3, -3, 1),
    (-3, 0, 1),
    (0, -9, 1000 * 1000 * 1000),
    (0, -6, 1000 * 1000),
    (0, -3, 1000),
    (0, 0, 1),
    (2, -2, 100 * 100),
]


@pytest.mark.parametrize("from_scale,to_scale,expect", SCALED_VALUE_TABLE)
def test_scaled_value(from_scale, to_scale, expect):
    assert Quantity(1, from_scale).scaled_value(to_scale) == expect


# TestNewScaledSet (upstream): NewScaledQuantity(value, scale) prints, parses back, and
# ScaledValue(scale) gives the value again.
NEW_SCALED_TABLE = [
    (1, -9, "1n"),
    (1000, -9, "1u"),
    (1, -6, "1u"),
    (1000, -6, "1m"),
    (1, -3, "1m"),
    (1000, -3, "1"),
    (1, 0, "1"),
    (0, -9, "0"),
    (0, -6, "0"),
    (0, -3, "0"),
    (0, 0, "0"),
]


@pytest.mark.parametrize("value,scale,expect", NEW_SCALED_TABLE)
def test_new_scaled(value, scale, expect):
    q = Quantity(value, scale)
    assert str(q) == expect
    assert parse(str(q)).scaled_value(scale) == value
    assert q == Quantity(value, scale, D)


# TestMilliNewSet (upstream): NewMilliQuantity(value, format). Upstream's
# "invalidFormatDefaultsToExponent" case has no counterpart: Format is an enum here.
MILLI_NEW_TABLE = [
    (1, D, "1m", True),
    (1000, D, "1", True),
    (1234000, D, "1234", True),
    (1024, B, "1024m", False),  # Format changes
    (1024 * 1024, B, "1048576m", False),  # Format changes
]


@pytest.mark.parametrize("value,fmt,expect,exact", MILLI_NEW_TABLE)
def test_new_milli(value, fmt, expect, exact):
    q = Quantity(value, -3, fmt)
    assert str(q) == expect
    if exact:
        assert parse(str(q)).milli_value() == value


# TestNewSet (upstream): NewQuantity(value, format); same note on the invalid format.
NEW_TABLE = [
    (1, D, "1"),
    (1000, D, "1k"),
    (1234000, D, "1234k"),
    (1024, B, "1Ki"),
    (1024 * 1024, B, "1Mi"),
]


@pytest.mark.parametrize("value,fmt,expect", NEW_TABLE)
def test_new(value, fmt, expect):
    q = Quantity(value, 0, fmt)
    assert str(q) == expect
    assert parse(str(q)).value() == value


# TestQuantityValueSet (upstream)
def test_value_of_1mi():
    q = parse("1Mi")
    assert q.value() == 1024 * 1024
    assert str(q) == "1Mi"


# Fact sheet §9 (k8s_qos_facts.md): input, format, canonical, MilliValue, Value.
# Where the sheet says "ovf" (upstream's int64 overflows), the exact value is given here.
FACT_SHEET_TABLE = [
    ("0", D, "0", 0, 0),
    ("1", D, "1", 1000, 1),
    ("1Ki", B, "1Ki", 1024000, 1024),
    ("7Mi", B, "7Mi", 7340032000, 7340032),
    ("6Gi", B, "6Gi", 6442450944000, 6442450944),
    ("5n", D, "5n", 1, 1),
    ("4u", D, "4u", 1, 1),
    ("3m", D, "3m", 3, 1),
    ("8k", D, "8k", 8000000, 8000),
    ("50k", D, "50k", 50000000, 50000),
    ("1E", D, "1E", 10**21, 1000000000000000000),  # MilliValue: ovf upstream
    ("1E-3", X, "1E-3", 1, 1),
    ("1e14", X, "100e12", 100000000000000000, 100000000000000),
    ("100.035k", D, "100.035k", 100035000, 100035),
    ("0.5", D, "500m", 500, 1),
    ("0.0005k", D, "500m", 500, 1),
    ("0.5e-1", X, "50e-3", 50, 1),
    ("10.035M", D, "10.035M", 10035000000, 10035000),
    ("1.3E+6", X, "1300e3", 1300000000, 1300000),
    ("9.01", D, "9010m", 9010, 10),
    ("8.1k", D, "8100", 8100000, 8100),
    ("2.5P", D, "2500T", 2500000000000000000, 2500000000000000),
    ("3.001n", D, "4n", 1, 1),
    ("1.1E-9", X, "2e-9", 1, 1),
    ("0.00000012345", D, "124n", 1, 1),
    ("9Ei", B, "9223372036854775807", MAX_INT64 * 1000, MAX_INT64),  # MilliValue: ovf upstream
    ("12E", D, "12E", 12 * 10**21, 12 * 10**18),  # both ovf upstream
    ("100.035Ki", B, "102435840m", 102435840, 102436),
    ("0.5Mi", B, "512Ki", 524288000, 524288),
    ("0.05Gi", B, "53687091200m", 53687091200, 53687092),
    ("0.000000000001Ki", D, "2n", 1, 1),
    (".001", D, "1m", 1, 1),
    ("1.G", D, "1.G", 1000000000000, 1000000000),
    ("1024Mi", B, "1Gi", 1073741824000, 1073741824),
    ("1000M", D, "1G", 1000000000000, 1000000000),
    (".001Ki", B, "1024m", 1024, 2),
    ("999999999999999999.1", D, "999999999999999999100m", 999999999999999999100, 10**18),  # ovf
    ("9223372036854775808", D, "9223372036854775808", 9223372036854775808000, 9223372036854775808),
]
# Four rows differ from the sheet, whose unmarked canonical strings came from a model. The
# sheet has "1e-3", "100035", "10035k" and "1G" for "1E-3", "100.035k", "10.035M" and
# "1.G". Upstream's int64 path keeps the input string when its digits look canonical:
# scale a multiple of 3, no leading 0, no trailing "000". The upstream code therefore
# prints those four inputs unchanged, and the rows above follow the code.


@pytest.mark.parametrize("text,fmt,canonical,milli,value", FACT_SHEET_TABLE)
def test_fact_sheet(text, fmt, canonical, milli, value):
    q = parse(text)
    assert q.format is fmt
    assert str(q) == canonical
    assert q.milli_value() == milli
    assert q.value() == value


# Rounding of value()/milli_value(): ceil for positive values; negative values are rounded
# away from zero, like upstream's int64 path (upstream code for the int64-path rows).
ROUNDING_TABLE = [
    ("1500m", 2, 1500),
    ("1001m", 2, 1001),
    ("1n", 1, 1),
    ("0.1m", 1, 1),
    ("-1500m", -2, -1500),
    ("-1.5", -2, -1500),
    ("-0.5", -1, -500),
    ("-2n", -1, -1),
    ("-1.5Ki", -1536, -1536000),
    ("-0.5Ki", -512, -512000),
    # Upstream's inf.Dec path returns 1 and 1 here (-1.5n rounds to -2n); we stay consistent.
    ("-1.5n", -1, -1),
    ("-1", -1, -1000),
]


@pytest.mark.parametrize("text,value,milli", ROUNDING_TABLE)
def test_value_rounding(text, value, milli):
    q = parse(text)
    assert q.value() == value
    assert q.milli_value() == milli


def test_scaled_value_of_tiny_and_huge_scales():
    assert parse("1n").scaled_value(999) == 1
    assert parse("-1n").scaled_value(999) == -1
    assert parse("0").scaled_value(999) == 0
    assert parse("1").scaled_value(-999) == 10**999


# --- quirks of upstream, reproduced (upstream code) -------------------------------------------
# input -> format, String(), exact value
QUIRKS_TABLE = [
    # An input that already looks canonical is printed back as written.
    ("+1", D, "+1", 1),
    ("1E3", X, "1E3", 1000),
    ("1e+3", X, "1e+3", 1000),
    ("1e03", X, "1e03", 1000),
    ("01", D, "01", 1),
    ("0001Ki", B, "0001Ki", 1024),
    ("+1Ki", B, "+1Ki", 1024),
    # ... but not one ending in "000", or one on the inf.Dec path.
    ("1000m", D, "1", 1),
    ("1e+21", X, "1e+21", 10**21),
    ("1e-7", X, "100e-9", Fraction(1, 10**7)),
    # Strings with no digits that still parse, as zero.
    (".", D, "0", 0),
    ("-", D, "0", 0),
    ("+", D, "0", 0),
    ("-.", D, "0", 0),
    ("Ki", B, "0", 0),
    ("m", D, "0", 0),
    ("e5", X, "0", 0),
    ("E", D, "0", 0),
    ("-0", D, "0", 0),
    ("0.0Ki", B, "0", 0),
    # A power of ten beyond the SI suffixes prints with no suffix at all.
    ("1000E", D, "1", 10**21),
    ("2000000000000000000000", D, "2", 2 * 10**21),
    ("1e21", X, "1e21", 10**21),
    ("18446744073709552000", D, "18446744073709552k", 18446744073709552000),
    # The exponent is read as int64, then truncated to int32.
    ("1e4294967296", X, "1e4294967296", 1),
    ("1e4294967297", X, "10", 10),
    ("1e9223372036854775807", X, "100e-3", Fraction(1, 10)),
    # Binary values: non-integers and |v| < 1024 print as DecimalSI, the cap is 2^63-1.
    ("1.5Ki", B, "1536", 1536),
    ("-1.5Ki", B, "-1536", -1536),
    ("-0.5Ki", B, "-512", -512),
    ("1023.5Ki", B, "1048064", 1048064),
    ("8Ei", B, "9223372036854775807", MAX_INT64),
    ("-9Ei", B, "-9223372036854775807", -MAX_INT64),
    ("1025Ki", B, "1025Ki", 1025 * 1024),
    ("0.9765625Ki", B, "1k", 1000),  # a whole number below 1024 prints as DecimalSI
    ("-0.9765625Ki", B, "-1k", -1000),
    ("1000.0Ki", B, "1000Ki", 1024000),
    # Rounding away from zero to nano, and very long inputs.
    ("-1.5n", D, "-2n", Fraction(-2, 10**9)),
    ("1.5e-9", X, "2e-9", Fraction(2, 10**9)),
    ("0.1m", D, "100u", Fraction(1, 10**4)),
    ("1e-1000000", X, "1e-9", Fraction(1, 10**9)),
    ("0." + "0" * 5000 + "1", D, "1n", Fraction(1, 10**9)),
    ("-0." + "0" * 3000 + "1Ki", D, "-1n", Fraction(-1, 10**9)),
    ("1." + "0" * 5000, D, "1", 1),
    ("7" * 4990 + "e-5000", X, "1e-9", Fraction(1, 10**9)),
]


@pytest.mark.parametrize("text,fmt,string,exact", QUIRKS_TABLE)
def test_upstream_quirks(text, fmt, string, exact):
    q = parse(text)
    assert q.format is fmt
    assert str(q) == string
    assert q.as_fraction() == exact


# --- our own limits (upstream accepts these, then overflows or hangs) ------------------------


@pytest.mark.parametrize(
    "text", ["1e1000", "1" * 1001, "1e2147483647", "1e-2147483649", "1" * 600 + "e500"]
)
def test_absurdly_large_values_are_refused(text):
    with pytest.raises(QuantityError, match="too large"):
        parse(text)


def test_large_values_below_the_limit_stay_exact():
    assert parse("1e999").value() == 10**999
    assert parse("1" * 1000).value() == int("1" * 1000)
    assert str(parse("1e999")) == "1e999"


def test_constructor_limits():
    with pytest.raises(QuantityError):
        Quantity(1, 1001)
    with pytest.raises(QuantityError):
        Quantity(10**1000)
    with pytest.raises(TypeError):
        Quantity(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Quantity(True)
    with pytest.raises(QuantityError):
        parse("1").scaled_value(5000)


# --- arithmetic -------------------------------------------------------------------------------

ZERO_DSI = (0, 0, D)

# TestAdd (upstream): a + b == expected (upstream compares values only).
ADD_TABLE = [
    ((10, 0, D), (1, 1, D), val(20, 0)),
    ((10, 0, D), (1, 0, B), val(11, 0)),
    ((10, 0, B), (1, 0, D), val(11, 0)),
    (ZERO_DSI, (50, 0, D), val(50, 0)),
    ((50, 0, D), ZERO_DSI, val(50, 0)),
    (ZERO_DSI, ZERO_DSI, val(0, 0)),
]

# TestSub (upstream)
SUB_TABLE = [
    ((10, 0, D), (1, 1, D), val(0, 0)),
    ((10, 0, D), (1, 0, B), val(9, 0)),
    ((10, 0, B), (1, 0, D), val(9, 0)),
    (ZERO_DSI, (50, 0, D), val(-50, 0)),
    ((50, 0, D), ZERO_DSI, val(50, 0)),
    (ZERO_DSI, ZERO_DSI, val(0, 0)),
]


@pytest.mark.parametrize("a,b,expect", ADD_TABLE)
def test_add(a, b, expect):
    assert (Quantity(*a) + Quantity(*b)).as_fraction() == expect


@pytest.mark.parametrize("a,b,expect", SUB_TABLE)
def test_sub(a, b, expect):
    assert (Quantity(*a) - Quantity(*b)).as_fraction() == expect


# TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix (upstream)
@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_adding_zero_keeps_the_suffix(text):
    zero, q = parse("0"), parse(text)
    assert str(q + zero) == text
    assert str(zero + q) == text
    assert str(q - zero) == text
    assert str(zero - q) == str(-q) == "-" + text


# TestQuantityNeg (upstream)
def test_neg():
    q = Quantity(901, -2, D)
    n = -q
    assert str(n) == "-9010m"
    assert n != q
    assert str(q) == "9010m"  # the source is unchanged


def test_format_of_a_sum():
    # The left side's format wins unless it is zero (upstream Add/Sub; upstream code).
    assert (parse("1Ki") + parse("1k")).format is B
    assert str(parse("1Ki") + parse("1k")) == "2024"
    assert (parse("1k") + parse("1Ki")).format is D
    assert str(parse("1k") + parse("1Ki")) == "2024"
    assert str(parse("512Mi") + parse("512Mi")) == "1Gi"
    assert str(parse("1Gi") - parse("1Gi")) == "0"
    # Sums are not capped, even for BinarySI (upstream code: 16Ei).
    assert str(parse("8Ei") + parse("8Ei")) == "18446744073709551614"
    assert str(parse("4Ei") + parse("4Ei") + parse("4Ei") + parse("4Ei")) == "16Ei"


def test_sum_of_requests():
    total = sum(parse(s) for s in ["100m", "250m", "1", "0.5"])
    assert total == parse("1850m")
    assert str(total) == "1850m"
    assert total.milli_value() == 1850
    mem = sum([parse("512Mi"), parse("512Mi"), parse("1Gi")], parse("0"))
    assert str(mem) == "2Gi"
    assert mem.format is B
    assert sum([parse("1Gi")]).format is B  # 0 + q takes q's format


def test_arithmetic_with_ints():
    assert parse("1500m") + 1 == parse("2500m")
    assert 1 - parse("250m") == parse("750m")
    with pytest.raises(TypeError):
        _ = parse("1") + 1.5
    with pytest.raises(TypeError):
        _ = parse("1") + "1"


def test_round_up_keeps_format_and_string_when_exact():
    q = parse("1E3")
    same, exact = q.round_up(0)
    assert exact and same is q and str(same) == "1E3"
    rounded, exact = parse("1.5Ki").round_up(3)
    assert not exact
    assert rounded.format is B
    assert rounded == 2000


# --- values handed over by a YAML loader ------------------------------------------------------

# value -> the text Go's encoding/json would write, and what that text prints as.
YAML_TABLE = [
    ("500m", "500m"),
    ("1Gi", "1Gi"),
    (2, "2"),
    (0, "0"),
    (-1, "-1"),  # TestJSONWhitespace (upstream): JSON numbers 1, 10, -1
    (1, "1"),
    (10, "10"),
    (1024, "1024"),
    (0.5, "500m"),
    (1.0, "1"),
    (1.0e3, "1k"),  # "1000": DecimalSI, not "1e3"
    (1e21, "1e+21"),  # Go writes 1e+21, and that string is kept
    (1e-7, "100e-9"),  # Go writes 1e-7
    (-0.0, "0"),
    (0.1, "100m"),
    (1.5, "1500m"),
    (123.456, "123.456"),  # kept as written, like "100.035k"
    (2**63, "9223372036854775808"),  # fits uint64: written as an integer
    (2**64, "18446744073709552k"),  # beyond uint64: go-yaml makes it a float
]


@pytest.mark.parametrize("value,string", YAML_TABLE)
def test_parse_quantity_from_yaml(value, string):
    assert str(parse_quantity(value)) == string


def test_yaml_numbers_keep_kubectl_format():
    assert parse_quantity(1.0e3).format is D
    assert parse_quantity(1e21).format is X
    assert parse_quantity(0.5).as_fraction() == Fraction(1, 2)
    assert parse_quantity(2).value() == 2


def test_parse_quantity_passes_quantities_through():
    q = parse("1Gi")
    assert parse_quantity(q) is q


@pytest.mark.parametrize(
    "value",
    [True, False, None, [], ["1"], {}, {"cpu": "1"}, b"1", Fraction(1, 2)]
    + [float("nan"), float("inf"), -float("inf"), 10**400],
)
def test_parse_quantity_rejects_non_quantities(value):
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_parse_quantity_takes_strings_as_they_are():
    # Upstream's UnmarshalJSON trims spaces inside a JSON string (TestJSONWhitespace);
    # here strings are parsed exactly as given, like ParseQuantity.
    with pytest.raises(QuantityError):
        parse_quantity(" 1")
    with pytest.raises(QuantityError):
        parse_quantity("1 ")


def test_messages_for_yaml_values():
    with pytest.raises(QuantityError, match=r"^true is not a quantity$"):
        parse_quantity(True)
    with pytest.raises(QuantityError, match=r"^null is not a quantity$"):
        parse_quantity(None)
    with pytest.raises(QuantityError, match=r"^a list is not a quantity$"):
        parse_quantity(["1"])


def test_repr_and_format_enum():
    assert repr(parse("1Gi")) == "<Quantity 1Gi BinarySI>"
    assert Format("BinarySI") is B
    assert str(X) == "DecimalExponent"
    assert Quantity(1, 3, "DecimalSI").format is D
