package keys

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// requestUsagesReference is the plain encoding/asn1 reading of a request's
// usage extensions that requestUsages replaced; FuzzRequestUsages holds the
// fast version to it.
func requestUsagesReference(csr *x509.CertificateRequest) (ku x509.KeyUsage, eku []string, isCA bool) {
	for _, ext := range csr.Extensions {
		switch {
		case ext.Id.Equal(oidKeyUsage):
			var bs asn1.BitString
			if _, err := asn1.Unmarshal(ext.Value, &bs); err == nil {
				for i := 0; i < 9; i++ {
					if bs.At(i) != 0 {
						ku |= 1 << uint(i)
					}
				}
			}
		case ext.Id.Equal(oidExtKeyUsage):
			var oids []asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(ext.Value, &oids); err == nil {
				for _, o := range oids {
					eku = append(eku, o.String())
				}
			}
		case ext.Id.Equal(oidBasicConstraints):
			var bc struct {
				IsCA bool `asn1:"optional"`
			}
			if _, err := asn1.Unmarshal(ext.Value, &bc); err == nil {
				isCA = bc.IsCA
			}
		}
	}
	return ku, eku, isCA
}

func FuzzRequestUsages(f *testing.F) {
	for _, usages := range [][]Usage{nil, DefaultUsages, {UsageServerAuth, UsageClientAuth, UsageCertSign}, {UsageAny, UsageOCSPSigning}} {
		exts, err := RequestTemplate{Usages: usages, IsCA: len(usages) == 3}.extensions()
		require.NoError(f, err)
		var ku, eku, bc []byte
		for _, e := range exts {
			switch {
			case e.Id.Equal(oidKeyUsage):
				ku = e.Value
			case e.Id.Equal(oidExtKeyUsage):
				eku = e.Value
			case e.Id.Equal(oidBasicConstraints):
				bc = e.Value
			}
		}
		f.Add(ku, eku, bc)
	}
	other, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 1}, {1, 2, 3, 4, 5}})
	f.Add([]byte{3, 2, 7, 128}, other, []byte{48, 6, 1, 1, 255, 2, 1, 0})
	f.Add([]byte{3, 1}, []byte{48, 0}, []byte{48, 3, 2, 1, 3})
	f.Fuzz(func(t *testing.T, ku, eku, bc []byte) {
		csr := &x509.CertificateRequest{Extensions: []pkix.Extension{
			{Id: oidKeyUsage, Value: ku}, {Id: oidExtKeyUsage, Value: eku}, {Id: oidBasicConstraints, Value: bc},
		}}
		wku, weku, wca := requestUsagesReference(csr)
		hku, heku, hca := requestUsages(csr, nil)
		if wku != hku || wca != hca || !slices.Equal(weku, heku) {
			t.Fatalf("reference: %v %v %v; fast: %v %v %v", wku, weku, wca, hku, heku, hca)
		}
	})
}
