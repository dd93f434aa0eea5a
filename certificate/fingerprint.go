package certificate

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/certlife/certlife/keys"
)

// specFingerprint hashes what a request is made from, in a canonical form:
// name lists as sorted sets, IPs normalised, default usages and issuer
// fields filled in. Two specs that ask the same request get the same value.
func specFingerprint(s *Spec) string {
	var b strings.Builder
	field := func(name string, vals ...string) {
		b.WriteString(name)
		for _, v := range vals {
			b.WriteByte(0)
			b.WriteString(v)
		}
		b.WriteByte('\n')
	}
	set := func(name string, vals []string) {
		c := slices.Clone(vals)
		slices.Sort(c)
		field(name, slices.Compact(c)...)
	}
	field("cn", s.CommonName)
	set("dns", s.DNSNames)
	ips := make([]string, 0, len(s.IPAddresses))
	for _, ip := range s.IPAddresses {
		if p := net.ParseIP(ip); p != nil {
			ip = p.String()
		}
		ips = append(ips, ip)
	}
	set("ip", ips)
	set("uri", s.URIs)
	set("email", s.EmailAddresses)
	if sub := s.Subject; sub != nil {
		set("o", sub.Organizations)
		set("c", sub.Countries)
		set("ou", sub.OrganizationalUnits)
		set("l", sub.Localities)
		set("st", sub.Provinces)
		set("street", sub.StreetAddresses)
		set("postal", sub.PostalCodes)
		field("serial", sub.SerialNumber)
	}
	usages := s.Usages
	if len(usages) == 0 {
		usages = keys.DefaultUsages
	}
	u := make([]string, len(usages))
	for i, x := range usages {
		u[i] = string(x)
	}
	set("usages", u)
	field("ca", strconv.FormatBool(s.IsCA))
	ref := s.IssuerRef.WithDefaults()
	field("issuer", ref.Name, ref.Kind, ref.Group)
	field("duration", durationOf(s.Duration).String())
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}
