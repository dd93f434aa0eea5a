package keys

import (
	"crypto/x509"
	"fmt"
	"slices"
)

// x509ExtKeyUsages maps each extended usage to crypto/x509's constant.
var x509ExtKeyUsages = map[Usage]x509.ExtKeyUsage{
	UsageAny:             x509.ExtKeyUsageAny,
	UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
}

// X509Usages maps certlife usages to what an issuer writes into a
// certificate: the key usage bits and the extended key usages, in the
// order given and without repeats. No usages means DefaultUsages(); isCA
// adds cert sign, as BuildCSR asks. An unknown usage is an error naming
// it. A certificate made from the result carries the usages CompareCSR
// expects of its request.
func X509Usages(usages []Usage, isCA bool) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	if len(usages) == 0 {
		usages = DefaultUsages()
	}
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for i, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
			continue
		}
		e, ok := x509ExtKeyUsages[u]
		if !ok {
			return 0, nil, fmt.Errorf("keys: usages[%d]: %q is not a known usage", i, u)
		}
		if !slices.Contains(eku, e) {
			eku = append(eku, e)
		}
	}
	if isCA {
		ku |= x509.KeyUsageCertSign
	}
	return ku, eku, nil
}
