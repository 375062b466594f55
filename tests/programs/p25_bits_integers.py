"""Bit manipulation and fixed-width integer behaviour: flags packed into bytes, bit counting,
shifts, masks, wraparound arithmetic and a tiny xorshift generator."""


def popcount(np, x):
    bits = np.unpackbits(np.ascontiguousarray(x).view(np.uint8).reshape(len(x), -1), axis=1)
    return bits.sum(axis=1)


def xorshift32(np, state, n):
    out = np.empty(n, dtype=np.uint32)
    s = np.uint32(state)
    for i in range(n):
        s ^= s << np.uint32(13)
        s ^= s >> np.uint32(17)
        s ^= s << np.uint32(5)
        out[i] = s
    return out


def main(np):
    # feature flags for 10 users, packed 8 per byte
    flags = np.array([[1, 0, 1, 1, 0, 0, 1, 0, 1, 1],
                      [0, 1, 1, 0, 0, 1, 0, 1, 0, 0],
                      [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]], dtype=np.uint8)
    packed = np.packbits(flags, axis=1)
    print("packed:", packed, packed.shape)
    unpacked = np.unpackbits(packed, axis=1, count=flags.shape[1])
    print("round trip:", np.array_equal(unpacked, flags))
    print("little-endian bits:", np.packbits(flags[0], bitorder="little"))

    # bitmask operations on uint16 permission words
    READ, WRITE, EXEC, ADMIN = (np.left_shift(np.uint16(1), np.arange(4, dtype=np.uint16)))
    perms = np.array([READ | WRITE, READ, READ | EXEC | ADMIN, 0], dtype=np.uint16)
    print("perms:", perms, [np.binary_repr(int(p), width=4) for p in perms])
    print("can write:", np.bitwise_and(perms, WRITE) != 0)
    granted = np.bitwise_or(perms, EXEC)
    revoked = np.bitwise_and(granted, np.invert(READ))
    print("after grant/revoke:", granted, revoked)
    print("xor toggles:", np.bitwise_xor(perms, np.uint16(0b1111)))
    print("right_shift:", np.right_shift(np.array([256, 255, 17]), 4))
    print("bit counts:", popcount(np, perms), "bitwise_count:", np.bitwise_count(perms))

    # integer limits and wraparound
    for t in (np.int8, np.uint8, np.int16, np.int32, np.uint64):
        info = np.iinfo(t)
        print(f"  {info.dtype}: [{info.min}, {info.max}] bits={info.bits}")
    a = np.array([120, 127, -128], dtype=np.int8)
    print("int8 + 10 wraps:", a + np.int8(10))
    u = np.array([250, 5], dtype=np.uint8)
    print("uint8 add:", u + np.uint8(10), "uint8 sub:", u - np.uint8(10))
    print("negating int8 min:", -np.array([-128], dtype=np.int8))
    print("int64 cumprod overflow-free up to 20!:", np.cumprod(np.arange(1, 21, dtype=np.int64))[-1])
    big = np.array([2**62], dtype=np.int64)
    print("int64 wraps:", big * 4)
    print("astype truncates:", np.array([300, -1, 255]).astype(np.uint8))
    print("can_cast int16->int8:", np.can_cast(np.int16, np.int8), "result_type:", np.result_type(np.int8, np.uint8))
    print("min_scalar_type(300):", np.min_scalar_type(300), "promote_types:", np.promote_types(np.uint32, np.int32))

    # binary representations and parsing back
    vals = np.array([5, -5, 255, 1024])
    reprs = [np.binary_repr(int(v), width=12) for v in vals]
    print("binary_repr width 12:", reprs)
    print("base_repr:", np.base_repr(255, base=16), np.base_repr(255, base=2), np.base_repr(-42, base=5))
    back = np.array([int(r, 2) for r in reprs]) - np.where(vals < 0, 1 << 12, 0)
    print("parsed back:", back, np.array_equal(back, vals))

    # gray codes and parity
    n = np.arange(16, dtype=np.uint8)
    gray = n ^ (n >> 1)
    print("gray codes:", gray)
    print("consecutive differ by one bit:", np.all(np.bitwise_count(gray[1:] ^ gray[:-1]) == 1))
    parity = np.bitwise_xor.reduce(np.unpackbits(n[:, None], axis=1), axis=1)
    print("parity:", parity)

    # xorshift stream and its bit statistics
    stream = xorshift32(np, 2463534242, 64)
    print("xorshift head:", stream[:4])
    ones = np.unpackbits(stream.view(np.uint8)).mean()
    print("fraction of one bits:", np.round(ones, 4))
    low_bytes = (stream & np.uint32(0xFF)).astype(np.uint8)
    print("low bytes head:", low_bytes[:8])
    print("gcd/lcm:", np.gcd(np.array([12, 18, 27]), 36), np.lcm.reduce(np.array([4, 6, 10])))
    return {"packed": packed, "revoked": revoked, "gray": gray, "stream": stream, "parity": parity,
            "wrap8": a + np.int8(10)}
