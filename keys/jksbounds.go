package keys

import "encoding/binary"

// jksBounded reports whether every length and count a JKS file declares
// fits in the bytes that follow it. keystore-go (v4.5.0) allocates what a
// file declares before reading it: a 40-byte file that declares four
// billion certificates makes it ask for 160 GB, and the Go runtime then
// aborts the whole process, which no recover can stop. A file that fails
// this check would fail to load anyway (its bytes run out), so
// DataMismatches treats it as a file that cannot be opened, without
// opening it. The walk follows the layout keystore-go reads: magic,
// version, entry count; per entry a tag, an alias, a timestamp, then a
// private key and its certificate chain, or one trusted certificate; a
// certificate is a type name (version 2) and its bytes.
//
// JKS has no work factor to bound: its integrity check is one SHA-1 over
// the file and its key protection one SHA-1 per 20 bytes of key.
func jksBounded(b []byte) bool {
	r := jksReader{b: b}
	if r.u32() != 0xfeedfeed {
		return false
	}
	version := r.u32()
	certificate := func() {
		switch version {
		case 1:
		case 2:
			r.skip(uint64(r.u16()))
		default:
			r.bad = true
		}
		r.skip(uint64(r.u32()))
	}
	for n := r.u32(); n > 0 && !r.bad; n-- {
		tag := r.u32()
		r.skip(uint64(r.u16())) // alias
		r.skip(8)               // creation time
		switch tag {
		case 1: // private key
			r.skip(uint64(r.u32()))
			// keystore-go makes room for the whole chain at once; each
			// certificate takes at least 4 bytes.
			certs := r.u32()
			if uint64(certs) > uint64(len(r.b))/4 {
				return false
			}
			for ; certs > 0 && !r.bad; certs-- {
				certificate()
			}
		case 2: // trusted certificate
			certificate()
		default:
			return false
		}
	}
	r.skip(20) // the SHA-1 digest
	return !r.bad
}

// jksReader reads big-endian fields off a byte slice; a read past the end
// marks it bad and reads zeros from then on.
type jksReader struct {
	b   []byte
	bad bool
}

func (r *jksReader) take(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *jksReader) skip(n uint64) { r.take(n) }

func (r *jksReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *jksReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}
