"""Bit-exact emulation of OpenJDK's ``Math.pow`` on x86-64 (HotSpot's Intel LIBM stub).

METEOR 1.5 (a Java jar) scores with ``fmean * (1 - 0.6 * Math.pow(frag, 0.2))``,
and to reproduce its scores bit for bit we need the exact doubles Java's
``Math.pow`` returns.  On x86-64, HotSpot (JDK 9 and later, JDK 17 included)
runs ``Math.pow`` in the interpreter, C1 and C2 alike through one generated
stub, Intel's LIBM ``pow`` (``src/hotspot/cpu/x86/macroAssembler_x86_pow.cpp``),
which is accurate to about 0.52 ulp but not correctly rounded, so neither
glibc's ``pow``, numpy's ``power`` (itself CPU-dependent) nor a correctly
rounded ``pow`` reproduces it; this module replays the stub's sequence of
IEEE-754 double operations one for one (Python float ``+ - *`` and, for the
stub's y == 0.5 shortcut, ``sqrt``; integer bit manipulation and table
look-ups; no FMA and no transcendental libm call, so its result does not
depend on the CPU running Python), with the stub's tables regenerated at
import time from their definitions, and returns identical bits for every
(x, y) including zeros, subnormals, infinities, NaNs and negative x.  The one
input the stub takes from outside IEEE arithmetic is ``rcpps``, whose exact
result Intel and AMD leave unspecified: it only picks a table index, and the
choice recorded here (``_RCPPS_INDEX_STEPS``, measured on AMD Zen 5) matters
only for results lying very close to a rounding midpoint, about one input in
10^4 to 10^5, whose last bit can differ on a CPU whose ``rcpps`` rounds
differently (so the jar itself is not CPU-independent there).
"""

from __future__ import annotations

import math
import struct

import numpy as np

__all__ = ["java_pow", "java_pow_array"]

_MASK64 = (1 << 64) - 1
_h = float.fromhex  # hex-float literal
_MANT_MASK = (1 << 52) - 1


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _double(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b & _MASK64))[0]


# ---------------------------------------------------------------------------
# Constants of the stub (Intel LIBM pow, as shipped in HotSpot).
# ---------------------------------------------------------------------------

# LH: short approximation of log2(e) that scales the reduced argument (185/128).
_LH = 1.4453125

# HotSpot's Intel LIBM pow coefficients of log2(1 + r/LH) - r (degree 8 in r).
_C0 = _h("-0x1.365786DC96112p-7")
_C1 = _h("-0x1.B0301EE241472p-6")
_C2 = _h("-0x1.528DB9F95985Ap-4")
_C3 = _h("-0x1.619B6B3841D2Ap-2")
_C4 = _h("0x1.004F2518775E3p-6")
_C5 = _h("0x1.76C9BAC8349BBp-5")
_C6 = _h("0x1.4635E486ECECCp-3")
_C7 = _h("-0x1.DABE1161BB241p-10")

# Extra-precision variant used near 1 for |y| >= 4096 (HotSpot's Intel LIBM
# pow coefficients): C3 and C7 split as CH + tail, C6 rounded differently.
_CH0 = _h("-0x1.61Ap-2")
_CH1 = _h("-0x1.DABE1p-10")
_Q9 = _h("0x1.2531EF8B5787Dp-16")
_Q10 = _h("0x1.4635E486ECECBp-3")
_Q11 = _h("-0x1.61BB2412055CCp-34")

# HotSpot's Intel LIBM pow coefficients of 2^z (z^5 .. z^1 terms; ln 2 last).
_E0 = _h("0x1.5D87FE78A6731p-10")
_E1 = _h("0x1.C6B08D704A0C0p-5")
_E2 = _h("0x1.3B2AB6FBA4E77p-7")
_E3 = _h("0x1.EBFBDFF82C58Fp-3")
_LN2 = _h("0x1.62E42FEFA39EFp-1")

# Adding 1.5 * 2^44 rounds a value below 2^43 to a multiple of 2^-8.
_SHIFTER = _h("0x1.8p+44")
# Keeps sign, exponent and the top 17 mantissa bits of y.
_HIGHMASK_Y = 0xFFFFFFF800000000


#: bits after the point of the tables' fixed-point arithmetic: far past the 2 x 53 the tables keep
_FRAC = 192


def _ln_fixed(num: int, den: int) -> int:
    """ln(num / den) x 2^_FRAC for num / den in [1, 2]: 2 atanh((x - 1) / (x + 1)), in integers
    (60-digit Decimal was most of this module's import; tests/test_java_pow.py pins every bit)."""
    z = ((num - den) << _FRAC) // (num + den)
    z2 = (z * z) >> _FRAC
    total, term, k = 0, z, 1
    while term:
        total += term // k
        term = (term * z2) >> _FRAC
        k += 2
    return 2 * total


def _exp_fixed(x: int) -> int:
    """e^(x / 2^_FRAC) x 2^_FRAC, for 0 <= x / 2^_FRAC < 1: its Taylor series in integers."""
    total, term, k = 0, 1 << _FRAC, 1
    while term:
        total += term
        term = (term * x >> _FRAC) // k
        k += 1
    return total


_LN2_FIXED = _ln_fixed(2, 1)


def _build_log_table() -> tuple[list[float], list[float], list[float]]:
    """B_i and log2(LH / B_i) split as hi (multiple of 2^-24) + lo, i = 0..512.

    B_i runs over the 9-bit values B0*LH can round to: 740/1024 .. 1023/1024,
    then 512/512 .. 740/512 (= LH).
    """
    b_vals, t_hi, t_lo = [], [], []
    for i in range(513):
        num, den = (740 + i, 1024) if i < 284 else (228 + i, 512)
        v = (_ln_fixed(185 * den, 128 * num) << _FRAC) // _LN2_FIXED  # log2((185 / 128) / b)
        hi = (v + (1 << (_FRAC - 25))) >> (_FRAC - 24)  # to the nearest 2^-24 (never a tie: v is irrational)
        b_vals.append(num / den)
        t_hi.append(hi / (1 << 24))
        # The stub's entry for B = LH (log2 1 = 0) has a -0.0 low part; int / int rounds correctly.
        t_lo.append(-0.0 if i == 512 else (v - (hi << (_FRAC - 24))) / (1 << _FRAC))
    return b_vals, t_hi, t_lo


# Low parts of the stub's 2^(j/256) table that are not the correctly rounded
# remainder: j = 0 holds 2^-72 (never zero, so its exponent can be shifted like
# the others) and six entries are one unit in the last place off.
_EXP_LO_OVERRIDES = {
    0: _h("0x1.0p-72"),
    7: _h("0x1.4C3793AA0D08Cp-55"),
    20: _h("0x1.03A1727C57B52p-59"),
    159: _h("0x1.D53954475202Ap-54"),
    173: _h("0x1.CABDAA24C78ECp-56"),
    205: _h("-0x1.C262360EA5B53p-60"),
    217: _h("-0x1.D220F86009092p-56"),
}


def _build_exp_table() -> tuple[list[int], list[int]]:
    """Bit patterns of 2^(j/256) = hi + lo, j = 0..255."""
    hi_bits, lo_bits = [], []
    for j in range(256):
        v = _exp_fixed(_LN2_FIXED * j // 256)
        hi = v / (1 << _FRAC)
        num, den = hi.as_integer_ratio()
        lo = _EXP_LO_OVERRIDES.get(j, (v - num * ((1 << _FRAC) // den)) / (1 << _FRAC))
        hi_bits.append(_bits(hi))
        lo_bits.append(_bits(lo))
    return hi_bits, lo_bits


_B, _T_HI, _T_LO = _build_log_table()
_EXP_HI_BITS, _EXP_LO_BITS = _build_exp_table()

# rcpps leaves the stub's table index open between two neighbours: one vendor's choice, AMD Zen's,
# gives the same bits on every CPU; [k] is the smallest 12-bit mantissa prefix indexed 511 - k
_RCPPS_INDEX_STEPS = (
    3, 8, 14, 19, 25, 31, 36, 43, 48, 53, 59, 65, 71, 77, 82, 88, 94, 99, 105, 111, 117, 123,
    129, 135, 141, 147, 152, 158, 164, 170, 176, 182, 188, 195, 200, 206, 213, 219, 225, 231,
    237, 244, 249, 255, 262, 268, 274, 281, 287, 293, 300, 307, 313, 320, 326, 332, 339, 345,
    352, 358, 365, 371, 378, 384, 392, 398, 405, 411, 418, 425, 431, 438, 445, 452, 459, 466,
    472, 479, 486, 493, 501, 507, 514, 521, 528, 535, 543, 549, 557, 563, 571, 578, 586, 592,
    600, 607, 615, 622, 629, 637, 644, 651, 658, 666, 674, 681, 688, 697, 704, 712, 719, 727,
    735, 743, 750, 758, 765, 773, 781, 789, 797, 805, 813, 821, 829, 837, 845, 853, 861, 869,
    877, 885, 893, 902, 910, 918, 927, 935, 943, 952, 960, 969, 977, 985, 994, 1002, 1011,
    1020, 1028, 1038, 1046, 1055, 1064, 1072, 1081, 1090, 1099, 1108, 1117, 1125, 1134, 1144,
    1152, 1161, 1172, 1181, 1189, 1198, 1208, 1217, 1226, 1236, 1245, 1254, 1263, 1273, 1283,
    1292, 1303, 1312, 1322, 1331, 1341, 1351, 1361, 1371, 1380, 1390, 1400, 1410, 1420, 1430,
    1441, 1451, 1461, 1471, 1481, 1491, 1501, 1512, 1523, 1532, 1543, 1553, 1564, 1575, 1586,
    1597, 1607, 1618, 1629, 1640, 1650, 1661, 1672, 1683, 1694, 1705, 1716, 1727, 1738, 1751,
    1762, 1773, 1784, 1795, 1807, 1819, 1826, 1833, 1838, 1844, 1850, 1856, 1863, 1868, 1874,
    1880, 1886, 1891, 1898, 1903, 1909, 1915, 1921, 1927, 1933, 1938, 1945, 1951, 1957, 1964,
    1969, 1976, 1981, 1988, 1994, 2000, 2005, 2012, 2018, 2025, 2030, 2036, 2043, 2049, 2056,
    2062, 2069, 2075, 2080, 2086, 2093, 2098, 2105, 2111, 2119, 2126, 2132, 2139, 2144, 2151,
    2157, 2164, 2169, 2177, 2183, 2190, 2196, 2203, 2208, 2215, 2222, 2229, 2236, 2242, 2249,
    2255, 2262, 2268, 2276, 2281, 2289, 2295, 2302, 2308, 2315, 2323, 2329, 2336, 2342, 2350,
    2356, 2363, 2371, 2378, 2384, 2392, 2398, 2405, 2413, 2419, 2426, 2433, 2441, 2447, 2454,
    2461, 2469, 2475, 2483, 2489, 2497, 2504, 2511, 2520, 2526, 2533, 2539, 2548, 2554, 2562,
    2569, 2577, 2584, 2592, 2599, 2607, 2615, 2621, 2629, 2636, 2644, 2651, 2658, 2665, 2674,
    2681, 2689, 2696, 2704, 2711, 2719, 2728, 2735, 2743, 2749, 2759, 2765, 2773, 2780, 2789,
    2796, 2805, 2812, 2820, 2828, 2836, 2845, 2852, 2861, 2868, 2877, 2884, 2893, 2900, 2909,
    2916, 2925, 2932, 2941, 2950, 2957, 2966, 2973, 2982, 2989, 2999, 3007, 3015, 3023, 3033,
    3040, 3049, 3056, 3065, 3074, 3082, 3091, 3099, 3109, 3117, 3125, 3133, 3143, 3151, 3160,
    3168, 3178, 3187, 3195, 3203, 3211, 3221, 3229, 3239, 3247, 3256, 3266, 3275, 3283, 3293,
    3301, 3311, 3320, 3328, 3338, 3347, 3357, 3365, 3375, 3383, 3394, 3402, 3411, 3420, 3431,
    3439, 3448, 3459, 3468, 3477, 3485, 3496, 3506, 3516, 3525, 3535, 3543, 3554, 3562, 3573,
    3583, 3592, 3602, 3611, 3622, 3631, 3641, 3650, 3661, 3670, 3682, 3691, 3702, 3711, 3721,
    3732, 3741, 3752, 3762, 3773, 3782, 3792, 3801, 3814, 3823, 3833, 3844, 3855, 3863, 3876,
    3887, 3895, 3908, 3917, 3929, 3938, 3949, 3959, 3972, 3981, 3993, 4002, 4013, 4025, 4036,
    4047, 4057, 4070, 4079, 4091,
)


def _build_index_of_prefix() -> list[int]:
    """Table index (0..512) for each 12-bit mantissa prefix."""
    table, step = [], 0
    for prefix in range(4096):
        while step < 512 and _RCPPS_INDEX_STEPS[step] <= prefix:
            step += 1
        table.append(512 - step)
    return table


_INDEX_OF_PREFIX = _build_index_of_prefix()

# ---------------------------------------------------------------------------
# Scalar emulation.
# ---------------------------------------------------------------------------

_QNAN_BITS = 0x7FF8000000000000  # the NaN the stub builds with pinsrw
_INDEFINITE_BITS = 0xFFF8000000000000  # x86's default NaN, from 0 * inf
_HALFMASK = 0xFFFFFFFFF8000000  # keeps the top 26 significant bits
_SIGN32 = 0x80000000


def _quiet(b: int) -> float:
    """NaN + NaN on x86 returns the first operand with its quiet bit set."""
    return _double(b | 0x0008000000000000)


def _log2_hi_lo(mant: int, e: int, round_split: bool, e_split: int) -> tuple[float, float]:
    """log2(2^e * 1.mant) ~ l_hi + l_lo, formed in the stub's order."""
    idx = _INDEX_OF_PREFIX[mant >> 40]
    mx_bits = 0x3FF0000000000000 | mant
    # Split mx so that mx_hi * B is exact; the split point moves with |e| so
    # that e + log2 stays exact in l_hi.  (e_split is e, but e - 1 on the
    # stub's path for negative x, which derives it from the exponent - 1.)
    c = (abs(e_split) + 1).bit_length() - 1
    mask = ((0xFFFFFFFF << c) & 0xFFFFFFFF) << 32
    if round_split:
        # For x in [1 - 1/32, 1 + 1/16) the stub rounds (adds half of bit 32).
        mx_hi = _double((mx_bits + 0x80000000) & mask)
    else:
        mx_hi = _double(mx_bits & mask)
    mx_lo = _double(mx_bits) - mx_hi
    b = _B[idx]
    r_hi = mx_hi * b - _LH
    r_lo = mx_lo * b
    r = r_lo + r_hi
    l_hi = (r_hi + _T_HI[idx]) + float(e)
    p1 = r_lo + _T_LO[idx]
    r2 = r * r
    r3 = r * r2
    r4 = r2 * r2
    # Two interleaved Horner chains, as the two SSE2 lanes evaluate them.
    a0 = r4 * ((_C4 + _C0 * r) * r3)
    a1 = r4 * ((_C5 + _C1 * r) * r)
    b0 = (_C6 + _C2 * r) * r3 + p1
    b1 = (_C7 + _C3 * r) * r
    l_lo = (a1 + b1) + (a0 + b0)
    return l_hi, l_lo


def _exp2_tail(z: float, j: int, adj: int) -> tuple[float, float]:
    """2^(j/256 + z) scaled by the exponent adjustment adj: (sum without th, th)."""
    # paddd on the high dword: adds n to the exponent (and the sign, if any).
    th = _double(_EXP_HI_BITS[j] + adj)
    tl = _double(_EXP_LO_BITS[j] + adj)
    w = (_LN2 * z) * th + tl
    z2 = z * z
    z4 = z2 * z2
    p0 = (z4 * (_E2 + _E0 * z)) * th
    p1 = (z2 * (_E3 + _E1 * z)) * th
    return (p0 + w) + p1, th


def _exp2_main(l_hi: float, l_lo: float, y: float, ybits: int, sign: int) -> float:
    """2^(y * log2 x) when |y * log2 x| < 2^9 (no overflow possible)."""
    y_hi = _double(ybits & _HIGHMASK_Y)
    y_lo = y - y_hi
    t = y_hi * l_hi  # exact by construction of the splits
    s = _SHIFTER + t
    k = _bits(s) & 0xFFFFFFFF  # round(t * 256), two's complement
    t_r = s - _SHIFTER
    t_d = (t - t_r) + y_lo * l_hi
    z = y * l_lo + t_d
    adj = ((((k << 12) & 0xFFFFFFFF) ^ sign) & 0xFFF00000) << 32
    part, th = _exp2_tail(z, k & 255, adj)
    return part + th


def _overflow_or_underflow(xbits: int, ybits: int, sign: int) -> float:
    if ((ybits >> 48) & 0x7FF0) == 0x7FF0:
        return _y_inf_nan_positive_x(xbits, ybits)
    log_sign = ((xbits >> 48) & 0x7FF0) - 0x3FF0
    if ((ybits >> 48) ^ log_sign) & 0x8000:
        return -0.0 if sign else 0.0
    return -math.inf if sign else math.inf


def _y_inf_nan_positive_x(xbits: int, ybits: int) -> float:
    if _double(xbits) == 1.0:
        return _double(_QNAN_BITS)
    if ybits & _MANT_MASK:
        return _quiet(ybits)
    log_sign = ((xbits >> 48) & 0x7FF0) - 0x3FF0
    return 0.0 if ((ybits >> 48) ^ log_sign) & 0x8000 else math.inf


def _exp2_big(l_hi, l_lo, y, xbits, ybits, sign) -> float:
    """2^(y * log2 x) for larger |y * log2 x|, with overflow/underflow handling."""
    big_l = l_hi + l_lo
    err = l_lo + (l_hi - big_l)
    lh = _double(_bits(big_l) & _HALFMASK)
    ll = big_l - lh
    yh = _double(ybits & _HALFMASK)
    yl = y - yh
    t = yh * lh
    s = _SHIFTER + t
    k = _bits(s) & 0xFFFFFFFF
    t_r = s - _SHIFTER
    q = y * (err + ll) + yl * lh
    z = q + (t - t_r)
    if ((_bits(t_r) >> 48) & 0x7FFF) > 0x4091:  # |t| > 1088: certain OF/UF
        return _overflow_or_underflow(xbits, ybits, sign)
    n = (k - (1 << 32) if k & _SIGN32 else k) >> 8
    n1 = n >> 1
    n2 = n - n1
    # Half of the scaling goes into the table entry, half into a final multiply.
    adj = ((((n1 << 20) & 0xFFFFFFFF) ^ sign)) << 32
    part, th = _exp2_tail(z, k & 255, adj)
    scale = _double((((n2 << 4) + 0x3FF0) & 0xFFFF) << 48)
    return _scaled(part, th, scale)


def _scaled(part: float, th: float, scale: float) -> float:
    """(part + th) * scale, rounded once also when the result is subnormal."""
    res = (part + th) * scale
    if (_bits(res) >> 52) & 0x7FF == 0:
        # Subnormal result: redo the last steps so it is rounded only once.
        e_th = ((_bits(th) >> 48) & 0x7FF0) - 0x3FF0
        e_res = (((_bits(scale) >> 48) & 0x7FF0) + e_th) >> 4
        cnt = -31 - e_res
        if cnt > 20:
            return res
        mask = 0xFFFFFFFF if cnt <= 0 else (0xFFFFFFFF << cnt) & 0xFFFFFFFF
        thh = _double(_bits(th) & (mask << 32))
        thl = th - thh
        res = thh * scale + (thl + part) * scale
    return res


def _pow_near_one_big_y(mant, e, e_split, y, xbits, ybits, sign) -> float:
    """pow for |x| in [1 - 1/32, 1 + 1/16) and |y| >= 4096: log2 in ~3 parts."""
    idx = _INDEX_OF_PREFIX[mant >> 40]
    mx_bits = 0x3FF0000000000000 | mant
    c = (abs(e_split) + 1).bit_length() - 1
    mask = ((0xFFFFFFFF << c) & 0xFFFFFFFF) << 32
    mx_hi = _double((mx_bits + 0x80000000) & mask)
    mx_lo = _double(mx_bits) - mx_hi
    b = _B[idx]
    r_lo = mx_lo * b
    r_hi = mx_hi * b - _LH
    r = r_lo + r_hi
    e_t = float(e) + _T_HI[idx]
    t_lo = 0.0 + _T_LO[idx]
    # Sum e + T_hi + r*(1 + CH1) + CH0*r^2 + T_lo with the rounding errors
    # of each step (Fast2Sum) gathered in e6.
    q2 = (_CH0 * r_hi) * r_hi
    u = r_hi + _CH1 * r_hi
    q3 = (_CH0 * r_lo) * (r_hi + r)
    s1 = e_t + u
    err1 = (e_t - s1) + u
    s2 = s1 + q2
    err2 = q2 + (s1 - s2)
    s3 = s2 + r_lo
    err12 = err2 + err1
    err3 = (s2 - s3) + r_lo
    ch1_r_lo = _CH1 * r_lo
    s4 = s3 + ch1_r_lo
    err4 = (s3 - s4) + ch1_r_lo
    s5 = s4 + t_lo
    err5 = (s4 - s5) + t_lo
    e6 = (((q3 + err12) + err3) + err4) + err5
    r2 = r * r
    r3 = r * r2
    r4 = r2 * r2
    p_a = ((_Q10 + _C2 * r) * r3 + e6) + ((_C0 * r + _C4) * r3) * r4
    p_b = (_Q11 + _Q9 * r) * r + ((_C1 * r + _C5) * r) * r4
    poly = p_a + p_b
    s5_bits = _bits(s5)
    lh = _double(s5_bits & _HALFMASK)
    ll = s5 - lh
    ytop = (ybits >> 48) & 0x7FF0
    if ytop == 0x7FF0:
        return _y_inf_nan_positive_x(xbits, ybits)
    if ((ytop + ((s5_bits >> 48) & 0x7FF0) - 0x3FF0) & 0xFFFFFFFF) >= 0x40C0:
        # |y * log2 x| >= 2^10 or so: overflow or underflow, by the signs.
        if ((ybits >> 48) ^ (s5_bits >> 48)) & 0x8000:
            return -0.0 if sign else 0.0
        return -math.inf if sign else math.inf
    l_tail = ll + poly
    yh = _double(ybits & 0xFFFFFFFF00000000)
    yl = y - yh
    t = yh * lh
    s = _SHIFTER + t
    k = _bits(s) & 0xFFFFFFFF
    t_r = s - _SHIFTER
    z = (t - t_r) + (yl * lh + y * l_tail)
    if ((_bits(t_r) >> 48) & 0x7FFF) > 0x4091:
        return _overflow_or_underflow(xbits, ybits, sign)
    kk = k >> 8  # logical shift; only the low bits survive below
    n1 = kk >> 1
    n2 = kk - n1
    adj = ((n1 << 20) & 0xFFFFFFFF) << 32
    part, th = _exp2_tail(z, k & 255, adj)
    scale = _double(((((n2 + 1023) << 20) & 0xFFFFFFFF) | sign) << 32)
    return _scaled(part, th, scale)


def _pow_abs(xbits: int, y: float, ybits: int, sign: int) -> float:
    """pow(|x|, y) for finite nonzero x; sign = 0x80000000 negates the result."""
    top = (xbits >> 48) & 0x7FFF
    e = (top >> 4) - 1023
    mant = xbits & _MANT_MASK
    round_split = False
    e_split = e - 1 if xbits >> 63 else e
    if top < 0x10:
        # Subnormal: the stub first scales by 2^128 (exactly).
        sb = _bits(_double(xbits & 0x7FFFFFFFFFFFFFFF) * _h("0x1.0p128"))
        e = ((sb >> 52) & 0x7FF) - 1023 - 128
        e_split = e
        mant = sb & _MANT_MASK
    elif top in (0x3FEF, 0x3FF0):
        # x in [1 - 1/32, 1 + 1/16)
        if ((ybits >> 48) & 0x7FF0) >= 0x40B0:
            return _pow_near_one_big_y(mant, e, e_split, y, xbits, ybits, sign)
        round_split = True
    l_hi, l_lo = _log2_hi_lo(mant, e, round_split, e_split)
    c = (abs(e) + 1).bit_length() - 1
    # The stub's path choice: ~ floor(log2|log2 x|) + floor(log2|y|).
    check = (16 * c - 0x3E00 + ((ybits >> 48) & 0x7FF0)) & 0xFFFFFFFF
    if check < 624:
        return _exp2_main(l_hi, l_lo, y, ybits, sign)
    if check & _SIGN32:
        # |y * log2 x| tiny: 1 + y * log2(x) * ln 2 (or exactly 1).
        if (check + 384) & _SIGN32:
            return 1.0
        ln2 = -_LN2 if sign else _LN2
        one = -1.0 if sign else 1.0
        return one + (l_hi * y + y * l_lo) * ln2
    if check >= 752:
        return _overflow_or_underflow(xbits, ybits, sign)
    return _exp2_big(l_hi, l_lo, y, xbits, ybits, sign)


def _integer_kind(y: float) -> int:
    """0: not an integer, 1: odd integer, 2: even integer (y finite, nonzero)."""
    if y != math.floor(y):
        return 0
    if abs(y) >= _h("0x1.0p53"):
        return 2
    return 1 if int(y) & 1 else 2


def java_pow(x: float, y: float) -> float:
    """``Math.pow(x, y)`` exactly as OpenJDK 17's x86-64 intrinsic returns it.

    All doubles x and y are handled, following the stub's own paths: its
    shortcuts for y == 2 and y == 0.5, the main path, the tiny-|y log2 x| path,
    the large-|y log2 x| path with overflow, underflow and subnormal results,
    the extra-precision path for |x| near 1 with |y| >= 4096, subnormal and
    negative x, zeros, infinities and NaNs (with the stub's NaN bit patterns).
    For METEOR's y = 0.2: pow(0.0, 0.2) == 0.0 and pow(1.0, 0.2) == 1.0.
    """
    x = float(x)
    y = float(y)
    xbits = _bits(x)
    ybits = _bits(y)
    if ybits == 0x4000000000000000:
        return x * x  # HotSpot's pow(x, 2.0) shortcut
    if ybits == 0x3FE0000000000000 and not xbits >> 63:
        return math.sqrt(x)  # HotSpot's pow(x, 0.5) shortcut (sqrt is IEEE-exact)
    y_zero = (ybits & 0x7FFFFFFFFFFFFFFF) == 0
    y_nan = y != y
    top = xbits >> 48
    if 0x10 <= top <= 0x7FEF:
        return _pow_abs(xbits, y, ybits, 0)
    if (top & 0x7FF0) == 0x7FF0:  # x is +-inf or NaN
        if xbits & _MANT_MASK:
            return 1.0 if y_zero else _quiet(xbits)
        if y_zero:
            return 1.0
        if y_nan:
            return _quiet(ybits)
        if top & 0x8000 and not math.isinf(y) and _integer_kind(y) == 1:
            return -0.0 if ybits >> 63 else -math.inf
        return 0.0 if ybits >> 63 else math.inf
    if (xbits & 0x7FFFFFFFFFFFFFFF) == 0:  # x is +-0
        if y_nan:
            return _quiet(ybits)
        if y_zero:
            return 1.0
        odd = not math.isinf(y) and _integer_kind(y) == 1
        if ybits >> 63:
            return math.copysign(math.inf, x) if odd else math.inf
        return x if odd else 0.0
    if not top & 0x8000:  # positive subnormal
        return _pow_abs(xbits, y, ybits, 0)
    # Negative, finite, nonzero x.
    if y_zero:
        return 1.0
    if y_nan:
        return _quiet(ybits)
    if math.isinf(y):
        if x == -1.0:
            return _double(_QNAN_BITS)
        log_sign = ((top & 0x7FF0) - 0x3FF0) & 0xFFFFFFFF
        return math.inf if not ((ybits >> 48) ^ log_sign) & 0x8000 else 0.0
    kind = _integer_kind(y)
    if kind == 0:
        return _double(_INDEFINITE_BITS)
    return _pow_abs(xbits, y, ybits, _SIGN32 if kind == 1 else 0)


# ---------------------------------------------------------------------------
# Vectorised emulation (main path; the rest falls back to the scalar code).
# ---------------------------------------------------------------------------

_INDEX_OF_PREFIX_NP = np.array(_INDEX_OF_PREFIX, dtype=np.int64)
_B_NP = np.array(_B)
_T_HI_NP = np.array(_T_HI)
_T_LO_NP = np.array(_T_LO)
_EXP_HI_BITS_NP = np.array(_EXP_HI_BITS, dtype=np.uint64)
_EXP_LO_BITS_NP = np.array(_EXP_LO_BITS, dtype=np.uint64)
# floor(log2(v)) for v = 1..2048 (index 0 unused).
_FLOOR_LOG2_NP = np.array([0] + [v.bit_length() - 1 for v in range(1, 2049)], dtype=np.int64)


def java_pow_array(xs, y: float) -> np.ndarray:
    """Element-wise ``java_pow(x, y)`` for an array of x and one y.

    Uses only IEEE ``+ - *`` on float64 arrays, integer bit operations and
    table look-ups, which give the same bits on every CPU and SIMD width.
    Elements off the stub's main path (x <= 0, subnormal, inf or NaN, or
    |y * log2 x| outside the main range) are computed with ``java_pow``.
    """
    x = np.ascontiguousarray(xs, dtype=np.float64)
    shape = x.shape
    x = x.ravel()
    y = float(y)
    ybits = _bits(y)
    with np.errstate(all="ignore"):
        if ybits == 0x4000000000000000:
            return (x * x).reshape(shape)
        return _java_pow_array_flat(x, y, ybits).reshape(shape)


def _java_pow_array_flat(x: np.ndarray, y: float, ybits: int) -> np.ndarray:
    xb = x.view(np.uint64)
    top = (xb >> np.uint64(48)).astype(np.int64)
    e = (top >> 4) - 1023
    c = _FLOOR_LOG2_NP[np.minimum(np.abs(e) + 1, 2048)]
    ytop = (ybits >> 48) & 0x7FF0
    check = 16 * c - 0x3E00 + ytop
    near_one = (top == 0x3FEF) | (top == 0x3FF0)
    main = (top >= 0x10) & (top <= 0x7FEF) & (check >= 0) & (check < 624)
    if ytop >= 0x40B0:
        main &= ~near_one  # extra-precision path: scalar code
    out = np.empty_like(x)
    if ybits == 0x3FE0000000000000:
        # pow(x, 0.5) is sqrt(x) for x with a clear sign bit (sqrt is IEEE-exact).
        main = x.view(np.int64) >= 0
        out[main] = np.sqrt(x[main])
    elif main.any():
        out[main] = _java_pow_main_np(xb[main], e[main], near_one[main], y, ybits)
    rest = np.flatnonzero(~main)
    for i in rest:
        out[i] = java_pow(float(x[i]), y)
    return out


def _java_pow_main_np(xb, e, near_one, y, ybits, idx=None) -> np.ndarray:
    """The stub's main path for positive normal x (same operations as the scalar).

    idx overrides the rcpps-derived table index (for studying other CPUs).
    """
    u64 = np.uint64
    mant = xb & u64(_MANT_MASK)
    if idx is None:
        idx = _INDEX_OF_PREFIX_NP[(mant >> u64(40)).astype(np.int64)]
    c = _FLOOR_LOG2_NP[np.abs(e) + 1]
    mask = (u64(0xFFFFFFFF) << (u64(32) + c.astype(np.uint64)))
    mx_bits = mant | u64(0x3FF0000000000000)
    hi_bits = (mx_bits + np.where(near_one, u64(0x80000000), u64(0))) & mask
    mx_hi = hi_bits.view(np.float64)
    mx_lo = mx_bits.view(np.float64) - mx_hi
    b = _B_NP[idx]
    r_hi = mx_hi * b - _LH
    r_lo = mx_lo * b
    r = r_lo + r_hi
    l_hi = (r_hi + _T_HI_NP[idx]) + e.astype(np.float64)
    p1 = r_lo + _T_LO_NP[idx]
    r2 = r * r
    r3 = r * r2
    r4 = r2 * r2
    a0 = r4 * ((_C4 + _C0 * r) * r3)
    a1 = r4 * ((_C5 + _C1 * r) * r)
    b0 = (_C6 + _C2 * r) * r3 + p1
    b1 = (_C7 + _C3 * r) * r
    l_lo = (a1 + b1) + (a0 + b0)

    y_hi = _double(ybits & _HIGHMASK_Y)
    y_lo = y - y_hi
    t = y_hi * l_hi
    s = _SHIFTER + t
    k = s.view(np.uint64) & u64(0xFFFFFFFF)
    t_r = s - _SHIFTER
    t_d = (t - t_r) + y_lo * l_hi
    z = y * l_lo + t_d
    j = (k & u64(255)).astype(np.int64)
    adj = ((k << u64(12)) & u64(0xFFF00000)) << u64(32)
    th = (_EXP_HI_BITS_NP[j] + adj).view(np.float64)
    tl = (_EXP_LO_BITS_NP[j] + adj).view(np.float64)
    w = (_LN2 * z) * th + tl
    z2 = z * z
    z4 = z2 * z2
    q0 = (z4 * (_E2 + _E0 * z)) * th
    q1 = (z2 * (_E3 + _E1 * z)) * th
    return ((q0 + w) + q1) + th
