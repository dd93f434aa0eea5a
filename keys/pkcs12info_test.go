package keys

import (
	"crypto/rand"
	"encoding/asn1"
	"fmt"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"software.sslmate.com/src/go-pkcs12"
)

// hugeIterations is what a hostile Secret asks for: opening a keystore
// with it takes seconds (7.5 s measured for 4M), on every pass.
const hugeIterations = 4_000_000

// TestDataMismatchesRefusesHugeIterationCounts: a PKCS#12 file that asks
// for more key derivation than certlife writes is drift and is not opened
// (RFC 7292 §4 macData.iterations and Appendix C pkcs-12PbeParams; RFC
// 8018 Appendix A.2 PBKDF2-params inside PBES2; RFC 9579 PBMAC1). Rows
// that rewrite one count leave the MAC unverifiable, so opening such a file
// would fail on the password (after running the MAC's derivation); the
// message says it was never opened.
func TestDataMismatchesRefusesHugeIterationCounts(t *testing.T) {
	f := newDriftFixture(t)
	chain, err := parseCertificates(f.data[SecretCertificate])
	require.NoError(t, err)
	cas, err := parseCertificates(f.data[SecretCA])
	require.NoError(t, err)
	pw := string(f.out.PKCS12.Password)
	encode := func(enc *pkcs12.Encoder) (ks, ts []byte) {
		enc = enc.WithRand(rand.Reader)
		ks, err := enc.Encode(f.parsed.Key, chain[0], chain[1:], pw)
		require.NoError(t, err)
		ts, err = enc.EncodeTrustStore(cas, pw)
		require.NoError(t, err)
		return ks, ts
	}
	legacy := f.write(OutputSpec{PKCS12: &PKCS12Spec{Password: f.out.PKCS12.Password, Profile: PKCS12LegacyDES}})
	pbmac1, _ := encode(pkcs12.Modern2026)

	tests := map[string]struct {
		profile PKCS12Profile
		mutate  func(d map[string][]byte)
		want    []string
	}{
		"a keystore and truststore encoded with one iteration more than certlife writes": {
			mutate: func(d map[string][]byte) {
				d[SecretPKCS12], d[SecretPKCS12Trust] = encode(pkcs12.Modern2023.WithIterations(2049))
			},
			want: []string{
				"keystore.p12 asks for 2049 key-derivation iterations, more than the 2048 certlife writes; it was not opened",
				"truststore.p12 asks for 2049 key-derivation iterations, more than the 2048 certlife writes; it was not opened",
			},
		},
		"a keystore whose MAC asks for 4M iterations": {
			mutate: func(d map[string][]byte) { d[SecretPKCS12] = withIterations(t, d[SecretPKCS12], "mac", hugeIterations) },
			want:   []string{"keystore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a keystore whose encrypted certificates ask for 4M iterations (PBES2)": {
			mutate: func(d map[string][]byte) {
				d[SecretPKCS12] = withIterations(t, d[SecretPKCS12], "encrypted", hugeIterations)
			},
			want: []string{"keystore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a keystore whose shrouded key asks for 4M iterations (PBES2)": {
			mutate: func(d map[string][]byte) { d[SecretPKCS12] = withIterations(t, d[SecretPKCS12], "key", hugeIterations) },
			want:   []string{"keystore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a truststore whose encrypted certificates ask for 4M iterations": {
			mutate: func(d map[string][]byte) {
				d[SecretPKCS12Trust] = withIterations(t, d[SecretPKCS12Trust], "encrypted", hugeIterations)
			},
			want: []string{"truststore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a LegacyDES keystore whose shrouded key asks for 4M iterations (PKCS#12 PBE)": {
			profile: PKCS12LegacyDES,
			mutate: func(d map[string][]byte) {
				d[SecretPKCS12], d[SecretPKCS12Trust] = withIterations(t, legacy[SecretPKCS12], "key", hugeIterations), legacy[SecretPKCS12Trust]
			},
			want: []string{"keystore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a LegacyDES truststore whose certificates ask for 4M iterations (PKCS#12 PBE)": {
			profile: PKCS12LegacyDES,
			mutate: func(d map[string][]byte) {
				d[SecretPKCS12], d[SecretPKCS12Trust] = legacy[SecretPKCS12], withIterations(t, legacy[SecretPKCS12Trust], "encrypted", hugeIterations)
			},
			want: []string{"truststore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a keystore whose PBMAC1 MAC asks for 4M iterations": {
			mutate: func(d map[string][]byte) { d[SecretPKCS12] = withIterations(t, pbmac1, "mac", hugeIterations) },
			want:   []string{"keystore.p12 asks for 4000000 key-derivation iterations, more than the 2048 certlife writes; it was not opened"},
		},
		"a keystore with a PBMAC1 MAC at certlife's count is opened and in line": {
			mutate: func(d map[string][]byte) { d[SecretPKCS12] = pbmac1 },
		},
		"a keystore whose count is zero is rewritten without being opened": {
			mutate: func(d map[string][]byte) { d[SecretPKCS12] = withIterations(t, d[SecretPKCS12], "key", 0) },
			want:   []string{"keystore.p12 is not in the Modern2023 profile"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := maps.Clone(f.data)
			o := f.out
			if tc.profile != "" {
				o.PKCS12 = &PKCS12Spec{Password: f.out.PKCS12.Password, Profile: tc.profile}
			}
			tc.mutate(d)
			got := DataMismatches(d, f.parsed, o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("DataMismatches (-want +got):\n%s", diff)
			}
			if len(got) > 0 {
				again, err := SecretData(rand.Reader, f.parsed.Key, d[SecretCertificate], d[SecretCA], o)
				require.NoError(t, err)
				require.Empty(t, DataMismatches(again, f.parsed, o), "data rewritten for the spec")
			}
		})
	}
}

// withIterations returns the PKCS#12 file der with the iteration count in
// one place — "mac", the first "encrypted" content, or every shrouded
// "key" in plain content — set to n, and all else as it was. The MAC is
// not recomputed.
func withIterations(t testing.TB, der []byte, where string, n int) []byte {
	t.Helper()
	var pfx p12PFX
	require.True(t, unmarshalAll(der, &pfx), "not a PKCS#12 file")
	mustMarshal := func(v any) []byte {
		out, err := asn1.Marshal(v)
		require.NoError(t, err)
		return out
	}
	explicit := func(inner []byte) asn1.RawValue {
		return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: inner}
	}
	setAlg := func(alg *asn1.RawValue, isPBES2 bool) {
		if isPBES2 {
			var p p12PBES2Params
			var kdf p12PBKDF2Params
			require.True(t, unmarshalAll(alg.FullBytes, &p) && unmarshalAll(p.KDF.Parameters.FullBytes, &kdf))
			kdf.Iterations = n
			p.KDF.Parameters = asn1.RawValue{FullBytes: mustMarshal(kdf)}
			*alg = asn1.RawValue{FullBytes: mustMarshal(p)}
			return
		}
		var p p12PBEParams
		require.True(t, unmarshalAll(alg.FullBytes, &p))
		p.Iterations = n
		*alg = asn1.RawValue{FullBytes: mustMarshal(p)}
	}
	changed := false
	if where == "mac" {
		if pfx.MacData.Mac.Algorithm.Algorithm.Equal(oidPBMAC1) {
			setAlg(&pfx.MacData.Mac.Algorithm.Parameters, true)
		} else {
			pfx.MacData.Iterations = n
		}
		changed = true
	}
	var content []byte
	var safe []p12ContentInfo
	require.True(t, unmarshalAll(pfx.AuthSafe.Content.Bytes, &content) && unmarshalAll(content, &safe))
	for i, ci := range safe {
		switch {
		case where == "encrypted" && !changed && ci.ContentType.Equal(oidEncryptedData):
			var ed p12EncryptedData
			require.True(t, unmarshalAll(ci.Content.Bytes, &ed))
			alg := &ed.EncryptedContentInfo.Algorithm
			setAlg(&alg.Parameters, alg.Algorithm.Equal(oidPBES2))
			safe[i].Content = explicit(mustMarshal(ed))
			changed = true
		case where == "key" && ci.ContentType.Equal(oidPKCS12Data):
			var bags []p12SafeBag
			require.True(t, unmarshalAll(ci.Content.Bytes, &content) && unmarshalAll(content, &bags))
			for j, bag := range bags {
				if !bag.ID.Equal(oidPKCS8ShroudedKeyBag) {
					continue
				}
				var epki p12EncryptedPrivateKeyInfo
				require.True(t, unmarshalAll(bag.Value.Bytes, &epki))
				setAlg(&epki.Algorithm.Parameters, epki.Algorithm.Algorithm.Equal(oidPBES2))
				bags[j].Value = explicit(mustMarshal(epki))
				changed = true
			}
			safe[i].Content = explicit(mustMarshal(mustMarshal(bags)))
		}
	}
	require.True(t, changed, "no %s count in the file", where)
	pfx.AuthSafe.Content = explicit(mustMarshal(mustMarshal(safe)))
	out := mustMarshal(pfx)
	info := inspectPKCS12(out)
	if n > 0 {
		require.Equal(t, n, info.iterations, "the rewritten file does not ask for %d iterations (%s)", n, fmt.Sprint(info))
	}
	return out
}

// BenchmarkInspectPKCS12 reads a keystore's profile and counts, the check
// that runs before it is opened, beside the opening it guards
// (pkcs12.DecodeChain, 2048 iterations).
func BenchmarkInspectPKCS12(b *testing.B) {
	f := newDriftFixture(b)
	ks := f.data[SecretPKCS12]
	b.Run("inspect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if info := inspectPKCS12(ks); info.profile != PKCS12Modern {
				b.Fatal(info)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := pkcs12.DecodeChain(ks, string(f.out.PKCS12.Password)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzInspectPKCS12: whatever the bytes, reading a PKCS#12 file's profile
// and counts never panics, gives the same answer twice, and never names a
// profile without a positive count (so a file it reads is never opened
// unbounded).
func FuzzInspectPKCS12(f *testing.F) {
	fx := newDriftFixture(f)
	for _, p := range []PKCS12Profile{PKCS12Modern, PKCS12LegacyRC2, PKCS12LegacyDES} {
		d := fx.write(OutputSpec{PKCS12: &PKCS12Spec{Password: "x", Profile: p}})
		f.Add(d[SecretPKCS12])
		f.Add(d[SecretPKCS12Trust])
	}
	f.Add(withIterations(f, fx.data[SecretPKCS12], "mac", hugeIterations))
	f.Add(withIterations(f, fx.data[SecretPKCS12], "key", 1<<40))
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x03})
	f.Fuzz(func(t *testing.T, der []byte) {
		info := inspectPKCS12(der)
		require.Equal(t, info, inspectPKCS12(der), "two readings differ")
		require.GreaterOrEqual(t, info.iterations, 0, "a negative count")
		if info.profile != "" {
			require.Positive(t, info.iterations, "a profile with no count: %+v", info)
		}
	})
}
