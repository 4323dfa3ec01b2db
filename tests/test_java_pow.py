"""java_pow: bit-exact emulation of Java's Math.pow (HotSpot x86-64), checked without Java."""

from __future__ import annotations

import hashlib
import math
import random
import struct
from decimal import Decimal, localcontext

import numpy as np
import pytest

from idc_toolkit.metrics import java_pow as jp
from idc_toolkit.metrics.java_pow import java_pow, java_pow_array

# Inputs x whose exact x ** 0.2 lies within 2^-60 (relative) of a rounding midpoint, where pow
# implementations disagree, and the result of OpenJDK 17.0.15's Math.pow(x, 0.2) on x86-64
# (AMD EPYC, Zen 5). "CR differs": Java's result is not the correctly rounded one.
# "rcpps-sensitive": a CPU whose rcpps gave an exact reciprocal would return another result.
HARD_CASES = [
    (574 / (1803 / 2.0), "0x1.d3cc847f64649p-1"),  # CR agrees
    (829 / (1752 / 2.0), "0x1.fa62533ccee63p-1"),  # CR agrees
    (107 / (297 / 2.0), "0x1.df839f395c8d4p-1"),  # CR agrees
    (513 / (3856 / 2.0), "0x1.88e415780adc4p-1"),  # CR agrees
    (241 / (2089 / 2.0), "0x1.7dd9596428162p-1"),  # CR agrees
    (float.fromhex("0x1.1d2a7f62b0babp-2"), "0x1.8c7cce0513108p-1"),  # CR differs
    (841 / (2948 / 2.0), "0x1.c9a55fbef95b6p-1"),  # CR agrees
    (float.fromhex("0x1.8fa7cf22e2687p-3"), "0x1.71447d5677da0p-1"),  # CR differs
    (float.fromhex("0x1.bd02156c798c1p+18"), "0x1.b16508bd5f3b8p+3"),  # CR differs
    (1619 / (3349 / 2.0), "0x1.fc8f63fb79062p-1"),  # CR differs
    (float.fromhex("0x1.b61f8a19827fap-2"), "0x1.b00b948b63523p-1"),  # CR differs
    (float.fromhex("0x1.54850e5ff0dc4p-3"), "0x1.65a0f624bf586p-1"),  # CR differs
    (691 / (1804 / 2.0), "0x1.e56d685ca270ap-1"),  # CR differs
    (309 / (2912 / 2.0), "0x1.77844d992d1d8p-1"),  # CR differs
    (float.fromhex("0x1.ba76f5fc20f6fp+15"), "0x1.1d9b32bb3268ap+3"),  # CR differs
    (float.fromhex("0x1.2cdb1490021b6p-478"), "0x1.5ce13103ad650p-96"),  # CR differs
    (float.fromhex("0x1.115dbc38a2efdp-6"), "0x1.c39c86214b45ap-2"),  # CR differs
    (247 / (2673 / 2.0), "0x1.6d457465dc3d2p-1"),  # CR differs
    (1585 / (3416 / 2.0), "0x1.f86757295fc6cp-1"),  # CR differs
    (781 / (3875 / 2.0), "0x1.aaecdc28fe85ep-1"),  # CR differs
    (268 / (541 / 2.0), "0x1.ff0cd273501afp-1"),  # CR differs
    (43 / (816 / 2.0), "0x1.467613825c4f0p-1"),  # CR differs
    (43 / (1046 / 2.0), "0x1.36a4ed5603336p-1"),  # CR differs
    (float.fromhex("0x1.d1631cf95f6fcp-8"), "0x1.7caf9a813e078p-2"),  # CR differs
    (float.fromhex("0x1.78ef78ba1e533p-1"), "0x1.e194bdbb4d22ep-1"),  # CR differs
    (821 / (3765 / 2.0), "0x1.b1b3c16ee89e6p-1"),  # CR differs
    (1139 / (3231 / 2.0), "0x1.dd6f1870ace84p-1"),  # CR differs
    (1459 / (3751 / 2.0), "0x1.e6eb848e1c9e4p-1"),  # CR differs
    (252 / (1739 / 2.0), "0x1.8faa3f863471ep-1"),  # CR differs
    (628 / (2231 / 2.0), "0x1.c86c68f8409dep-1"),  # CR differs
    (320 / (2601 / 2.0), "0x1.82cad7fe9dd0fp-1"),  # CR differs
    (1397 / (3720 / 2.0), "0x1.e382e6626c29cp-1"),  # CR differs
    (853 / (3299 / 2.0), "0x1.c0bbfd88baa57p-1"),  # rcpps-sensitive
    (float.fromhex("0x1.d66932479fc42p-1"), "0x1.f765e07ce81b8p-1"),  # rcpps-sensitive, CR differs
    (21 / (2806 / 2.0), "0x1.b9e88e88bbf86p-2"),  # rcpps-sensitive, CR differs
    (float.fromhex("0x1.bf052701f8d8fp-3"), "0x1.79a1ecc954598p-1"),  # rcpps-sensitive, CR differs
    (float.fromhex("0x1.d9ddef38b0f00p+0"), "0x1.218cbef8f4812p+0"),  # rcpps-sensitive, CR differs
    (float.fromhex("0x1.ebce1423fb785p+18"), "0x1.ba261ed479d0bp+3"),  # rcpps-sensitive
    (float.fromhex("0x1.8392fcdf62bc9p+0"), "0x1.1623c1854f0fep+0"),  # rcpps-sensitive, CR differs
    (float.fromhex("0x1.ee501ff0087cbp-1"), "0x1.fc69a55bd4937p-1"),  # rcpps-sensitive
]

# (x, y, OpenJDK 17.0.15 Math.pow(x, y) on x86-64): edges of y = 0.2 and the stub's other paths
# (near-1 extra precision, subnormal and overflowing results, tiny |y log2 x|, negative x).
OTHER_PATHS = [
    (5e-324, 0.2, "0x1.2611186bae64ap-215"),
    (1e-310, 0.2, "0x1.0747ddddf2280p-206"),
    (2.2250738585072014e-308, 0.2, "0x1.8406003b2ae27p-205"),
    (1.7976931348623157e308, 0.2, "0x1.bdb8cdadbe15ep+204"),
    (0.96875, 0.2, "0x1.fcc25d1b4ab3dp-1"),
    (0.9999999999999999, 0.2, "0x1.0000000000000p+0"),
    (1.0625, 0.2, "0x1.031f74b72e673p+0"),
    (0.999, 5000.0, "0x1.b8798c0f74e0cp-8"),
    (1.0001, -1000000.0, "0x1.aae2f516e7c8cp-145"),
    (1.001, -708000.0, "0x1.0f06883f2225ap-1021"),
    (0.5, 1060.3, "0x0.00000000033fcp-1022"),
    (2.0, -1050.7, "0x0.00000009d9624p-1022"),
    (10.0, 300.5, "0x1.2e34f399a87bcp+998"),
    (3.7, -530.1, "0x1.57300c38abaf9p-1001"),
    (1.5, 1750.0, "0x1.9b64d0768f358p+1023"),
    (0.25, -512.1, "inf"),
    (1.5, 1e-17, "0x1.0000000000000p+0"),
    (-2.5, 3.0, "-0x1.f400000000000p+3"),
    (-0.75, -4.0, "0x1.948b0fcd6e9e0p+1"),
    (-0.5, 1061.0, "-0x0.0000000002000p-1022"),
    (1e-310, 0.7, "0x1.1a66c1e139f6fp-721"),
]


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("x, expected", HARD_CASES)
def test_hard_cases_match_java(x, expected):
    assert java_pow(x, 0.2).hex() == expected


def test_hard_cases_array_matches_java():
    xs = np.array([x for x, _ in HARD_CASES])
    got = java_pow_array(xs, 0.2)
    assert [v.hex() for v in got.tolist()] == [e for _, e in HARD_CASES]


@pytest.mark.parametrize("x, y, expected", OTHER_PATHS)
def test_other_paths_match_java(x, y, expected):
    assert java_pow(x, y).hex() == expected
    assert java_pow_array(np.array([x]), y)[0].hex() == expected


def test_special_values():
    assert java_pow(0.0, 0.2) == 0.0 and math.copysign(1, java_pow(0.0, 0.2)) == 1
    assert java_pow(1.0, 0.2) == 1.0
    assert java_pow(-0.0, 0.2) == 0.0
    assert java_pow(math.inf, 0.2) == math.inf
    assert math.isnan(java_pow(math.nan, 0.2))
    assert math.isnan(java_pow(-0.5, 0.2))  # negative x, non-integer y
    assert java_pow(math.nan, 0.0) == 1.0
    assert math.isnan(java_pow(1.0, math.inf))  # Java, unlike C: NaN
    assert java_pow(0.0, -1.0) == math.inf and java_pow(-0.0, -1.0) == -math.inf
    assert java_pow(-math.inf, 3.0) == -math.inf
    assert _bits(java_pow(-2.0, 0.5)) == 0xFFF8000000000000  # x86's default NaN
    got = java_pow_array(np.array([0.0, 1.0, -0.0, math.inf, math.nan, -0.5, 1e-320]), 0.2)
    assert got[:4].tolist() == [0.0, 1.0, 0.0, math.inf]
    assert math.isnan(got[4]) and math.isnan(got[5]) and got[6] == java_pow(1e-320, 0.2)


def test_tables_equal_hotspot_source():
    # SHA-256 of the stub's _L_tbl_pow and _T_exp tables (as little-endian uint64) copied from
    # src/hotspot/cpu/x86/macroAssembler_x86_pow.cpp; the module generates them itself.
    log_bits = [b for hi, lo in zip(jp._T_HI, jp._T_LO) for b in (_bits(hi), _bits(lo))]
    exp_bits = [b for pair in zip(jp._EXP_HI_BITS, jp._EXP_LO_BITS) for b in pair]

    def digest(words):
        return hashlib.sha256(struct.pack(f"<{len(words)}Q", *words)).hexdigest()

    assert digest(log_bits) == "e160ebd49b52dedde8148fc2003759c5d49329c93072d1b7b13e71aab86223f2"
    assert digest(exp_bits) == "4210a0d62905e97b5f75a348715540fe8de1301651ada0f6bfcd8db1eac5e4dc"
    assert jp._INDEX_OF_PREFIX[0] == 512 and jp._INDEX_OF_PREFIX[4095] == 0
    assert all(a >= b for a, b in zip(jp._INDEX_OF_PREFIX, jp._INDEX_OF_PREFIX[1:]))


def _correctly_rounded_or_none(x: float, y: float):
    """The correctly rounded x ** y, or None when within 1/64 ulp of a rounding midpoint.

    The stub errs by less than 2^-7.8 ulp beyond the rounding, so away from midpoints it must
    round correctly; this checks the algorithm independently of Java.
    """
    with localcontext() as ctx:
        ctx.prec = 40
        exact = (Decimal(x).ln() * Decimal(y)).exp()
        nearest = float(exact)
        below = exact >= Decimal(nearest)
        ulp = math.ulp(nearest) if below else math.ulp(math.nextafter(nearest, 0.0))
        off = abs(exact - Decimal(nearest)) / Decimal(ulp)  # in [0, 1/2]
    return None if Decimal("0.5") - off < Decimal(1) / 64 else nearest


def test_correctly_rounded_away_from_midpoints():
    rng = random.Random(20240917)
    xs = [1.0 - rng.random() for _ in range(1200)]  # (0, 1]
    for _ in range(1200):  # fragmentation-like values chunks / (matches / 2.0)
        m = rng.randint(2, 10**6)
        xs.append(rng.randint(1, m // 2) / (m / 2.0))
    xs += [rng.random() * 1e6 for _ in range(300)]
    xs += [rng.uniform(1 - 1 / 32, 1 + 1 / 16) for _ in range(300)]
    checked = 0
    got = java_pow_array(np.array(xs), 0.2).tolist()
    for x, g in zip(xs, got):
        expected = _correctly_rounded_or_none(x, 0.2)
        if expected is None:
            continue
        checked += 1
        assert g == expected, (x.hex(), g.hex(), expected.hex())
        assert java_pow(x, 0.2) == expected
    assert checked > 2800
    for x, y in [(3.5, 0.25), (0.37, -3.7), (1.03, 123.0), (0.999, 5000.0), (7.0, -100.5)]:
        expected = _correctly_rounded_or_none(x, y)
        assert expected is None or java_pow(x, y) == expected


def test_array_matches_scalar():
    rng = np.random.default_rng(3)
    xs = np.concatenate(
        [
            rng.random(2000),
            rng.random(500) * 1e6,
            rng.uniform(1 - 1 / 32, 1 + 1 / 16, 500),
            rng.integers(1, 0x7FF0000000000000, 500).view(np.float64),
            rng.integers(1, 1 << 52, 50).view(np.float64),  # subnormal
            np.array([0.0, -0.0, 1.0, -1.0, -2.0, math.inf, -math.inf, math.nan]),
        ]
    )
    for y in (0.2, 0.5, 2.0, 3.0, -0.2, 1e-12, 300.5, -4096.5):
        got = java_pow_array(xs, y).view(np.uint64)
        want = np.array([java_pow(float(x), y) for x in xs]).view(np.uint64)
        assert np.array_equal(got, want), y
    assert java_pow_array(xs.reshape(-1, 2), 0.2).shape == (len(xs) // 2, 2)
