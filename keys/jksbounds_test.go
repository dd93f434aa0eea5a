package keys

import (
	"bytes"
	"encoding/binary"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/stretchr/testify/require"
)

// jksFile builds a JKS file field by field (big-endian, as keystore-go
// reads it).
func jksFile(fields ...any) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		if s, ok := f.(string); ok {
			_ = binary.Write(&b, binary.BigEndian, uint16(len(s)))
			b.WriteString(s)
			continue
		}
		_ = binary.Write(&b, binary.BigEndian, f)
	}
	return b.Bytes()
}

// A JKS file that declares more than it holds is never handed to
// keystore-go, which would allocate what it declares (a fatal out of
// memory for the whole process, not a panic); one certlife writes, or any
// that holds what it declares, is.
func TestJKSBounded(t *testing.T) {
	const magic, v2 = uint32(0xfeedfeed), uint32(2)
	f := newDriftFixture(t)
	tests := map[string]struct {
		file []byte
		want bool
	}{
		"the keystore certlife writes":   {file: f.data[SecretJKS], want: true},
		"the truststore certlife writes": {file: f.data[SecretJKSTrust], want: true},
		"an empty store with its digest": {file: jksFile(magic, v2, uint32(0), [20]byte{}), want: true},
		"a key entry that declares four billion certificates (found by FuzzDataMismatches)": {
			file: jksFile(magic, v2, uint32(1), uint32(1), "certificate", uint64(0), uint32(0), uint32(0xffffffff)),
		},
		"a trusted certificate that declares 2 GiB": {
			file: jksFile(magic, v2, uint32(1), uint32(2), "ca", uint64(0), "X.509", uint32(0x7fffffff)),
		},
		"a key that declares 4 GiB": {
			file: jksFile(magic, v2, uint32(1), uint32(1), "certificate", uint64(0), uint32(0xffffffff)),
		},
		"four billion entries in twelve bytes": {file: jksFile(magic, v2, uint32(0xffffffff))},
		"a certificate of an unknown version":  {file: jksFile(magic, uint32(3), uint32(1), uint32(2), "ca", uint64(0), uint32(0), [20]byte{})},
		"an unknown entry tag":                 {file: jksFile(magic, v2, uint32(1), uint32(9), "x", uint64(0), [20]byte{})},
		"another magic":                        {file: jksFile(uint32(0xcececece), v2, uint32(0), [20]byte{})},
		"no digest":                            {file: jksFile(magic, v2, uint32(0))},
		"nothing":                              {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, jksBounded(tc.file))
		})
	}
	// Every proper prefix of a real store runs out of bytes.
	for _, file := range [][]byte{f.data[SecretJKS], f.data[SecretJKSTrust]} {
		for n := range len(file) {
			require.False(t, jksBounded(file[:n]), "a prefix of %d of %d bytes passes", n, len(file))
		}
	}
}

// DataMismatches reports a keystore.jks or truststore.jks that declares
// more than it holds as one that cannot be opened, without opening it.
func TestDataMismatchesRefusesUnboundedJKS(t *testing.T) {
	f := newDriftFixture(t)
	d := maps.Clone(f.data)
	d[SecretJKS] = jksFile(uint32(0xfeedfeed), uint32(2), uint32(1), uint32(1), "certificate", uint64(0), uint32(0), uint32(0xffffffff))
	d[SecretJKSTrust] = jksFile(uint32(0xfeedfeed), uint32(2), uint32(1), uint32(2), "ca", uint64(0), "X.509", uint32(0xffffffff))
	want := []string{
		`keystore.jks has no key entry "certificate" that opens with the password of spec`,
		"truststore.jks cannot be opened with the password of spec (changed, or the truststore is damaged)",
	}
	if diff := cmp.Diff(want, DataMismatches(d, f.parsed, f.out)); diff != "" {
		t.Fatalf("DataMismatches (-want +got):\n%s", diff)
	}
}

// FuzzJKSBounded: whatever the bytes, the check never panics; a file it
// lets through is handed to keystore-go, and what loads from it fits in
// it. (A file it let through that declared gigabytes would end this
// target with a fatal out of memory.)
func FuzzJKSBounded(f *testing.F) {
	fx := newDriftFixture(f)
	f.Add(fx.data[SecretJKS], true)
	f.Add(fx.data[SecretJKSTrust], false)
	f.Add(jksFile(uint32(0xfeedfeed), uint32(2), uint32(1), uint32(1), "certificate", uint64(0), uint32(0), uint32(0xffffffff)), true)
	f.Fuzz(func(t *testing.T, file []byte, rightPassword bool) {
		if !jksBounded(file) {
			return
		}
		pw := []byte("wrong")
		if rightPassword {
			pw = []byte("s3cret-pw")
		}
		store := keystore.New()
		if store.Load(bytes.NewReader(file), pw) != nil {
			return
		}
		held := 0
		for _, alias := range store.Aliases() {
			if chain, err := store.GetPrivateKeyEntryCertificateChain(alias); err == nil {
				for _, c := range chain {
					held += len(c.Content)
				}
			}
			if e, err := store.GetTrustedCertificateEntry(alias); err == nil {
				held += len(e.Certificate.Content)
			}
		}
		require.LessOrEqual(t, held, len(file), "a %d-byte file loaded %d bytes of certificates", len(file), held)
	})
}
