package certificate

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// heldSecret lists, sorted, the data keys of a target secret that the
// certificate must not write because someone else's data is in it: the
// secret exists, is not owned by the certificate (ObjectMeta.OwnerUID),
// carries none of the annotations certlife and the reference operator
// write on the secrets they issue into (AnnotationCertificateName,
// AnnotationIssuerName, AnnotationCertManagerCertificateName,
// AnnotationCertManagerIssuerName), is not handed over
// (AnnotationAllowTakeover "true"), and holds data — a private key, a
// certificate or anything else: a write replaces the data whole, so
// whatever is there would be lost. Nil when the certificate may write it:
// no secret, one it owns or that either operator wrote, one handed over,
// and one with no data or only empty values (a secret made beforehand,
// with only labels and annotations, or the empty tls.crt and tls.key a
// kubernetes.io/tls secret needs), which is filled.
func heldSecret(p *pass) []string {
	sec := p.secret
	if sec == nil || (sec.OwnerUID != "" && sec.OwnerUID == p.cert.UID) {
		return nil
	}
	a := sec.Annotations
	if a[AnnotationAllowTakeover] == "true" {
		return nil
	}
	for _, k := range []string{AnnotationCertificateName, AnnotationIssuerName, AnnotationCertManagerCertificateName, AnnotationCertManagerIssuerName} {
		if a[k] != "" {
			return nil
		}
	}
	var held []string
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		if len(sec.Data[k]) > 0 {
			held = append(held, k)
		}
	}
	return held
}

// heldMessage says why a held secret is left alone and how to hand it
// over; the same words whatever the time, for Ready's message.
func heldMessage(p *pass, held []string) string {
	sec := p.secret
	ns := ""
	if sec.Namespace != "" {
		ns = " -n " + sec.Namespace
	}
	return "secret " + sec.Name + " holds " + strings.Join(held, ", ") + ", which neither certlife nor cert-manager wrote " +
		"(it is not owned by this certificate and has no " + AnnotationCertificateName + " or " + AnnotationCertManagerCertificateName +
		" annotation): it is left as it is, and nothing is issued into it. To let certificate " + p.cert.Name +
		" replace what it holds, annotate it: kubectl annotate secret" + ns + " " + sec.Name + " " + AnnotationAllowTakeover +
		"=true; or set spec.secretName to a secret of its own"
}

// heldRecheck is when a certificate whose secret is held looks again
// without a change: on fixed ticks of Config.SecretInUseRecheck from its
// creation. The secret's own change — the annotation that hands it over,
// its deletion — brings the next pass sooner, through the host's watch.
func heldRecheck(p *pass, now time.Time) time.Time {
	return nextTick(p.cert.CreationTimestamp, p.cfg.secretInUseRecheck(), now)
}
