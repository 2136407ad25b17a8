package gzipparts

// The CRC-32 of two byte strings one after the other, from the CRC-32 of
// each and the length of the second, as zlib's crc32_combine computes it:
// appending n bytes to a message multiplies its CRC by x^(8n) modulo the
// polynomial, and x^(8n) is a product of the powers x^(2^k) kept in
// x2n. hash/crc32 has no such function.

// poly is the IEEE polynomial, bit-reversed, as hash/crc32 uses it.
const poly = 0xedb88320

// x2n[k] is x^(2^k) modulo poly.
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// multModP is a·b modulo poly, in the reflected bit order (bit 31 is x^0).
func multModP(a, b uint32) uint32 {
	if a == 0 {
		return 0
	}
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
}

// x8nModP is x^(8n) modulo poly.
func x8nModP(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// combine is the CRC-32 of a then b, from crcA, crcB and shiftB,
// x8nModP(len(b)).
func combine(crcA, crcB, shiftB uint32) uint32 {
	return multModP(shiftB, crcA) ^ crcB
}
