package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
)

// inspectSecret describes a certificate Secret: each certificate of
// tls.crt and ca.crt (subject, issuer, serial, validity, names, public
// key, usages, SHA-256 fingerprint), whether tls.key is the leaf's key,
// the cert-manager and certlife annotations, and — for a Secret a
// Certificate names — whether the leaf is what that Certificate asks for,
// by the controller's own decision at now with cfg. It reads no more of
// the Secret than the decisions do (keys.MaxSecretValueBytes,
// keys.MaxCertificates, keys.MaxPrivateKeyBytes), and prints no private
// key and no keystore.
func inspectSecret(ctx context.Context, c client.Reader, namespace, name string, now time.Time, cfg certificate.Config, out io.Writer) error {
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("namespace %q: %w", namespace, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return fmt.Errorf("secret name %q: %w", name, err)
	}
	sec, err := getSecret(ctx, c, namespace, name)
	if err != nil {
		return err
	}
	if sec == nil {
		return fmt.Errorf("secret %s/%s does not exist", namespace, name)
	}
	w := &writer{w: out}
	p := parseData(sec.Data)

	head := [][2]string{{"Type", string(sec.Type)}}
	var dataKeys []string
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		dataKeys = append(dataKeys, fmt.Sprintf("%s (%d bytes)", k, len(sec.Data[k])))
	}
	head = append(head, [2]string{"Data", orDefault(strings.Join(dataKeys, ", "), "none")})
	for _, k := range slices.Sorted(maps.Keys(sec.Annotations)) {
		if strings.HasPrefix(k, "cert-manager.io/") || strings.HasPrefix(k, "certlife.dev/") {
			head = append(head, [2]string{k, quoteEmpty(sec.Annotations[k])})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sec.Labels)) {
		if strings.Contains(k, "cert-manager.io") || strings.HasPrefix(k, "certlife.dev/") {
			head = append(head, [2]string{"label " + k, quoteEmpty(sec.Labels[k])})
		}
	}
	w.section("Secret "+namespace+"/"+name, head)

	switch {
	case p.err != nil:
		w.section("tls.crt", [][2]string{{"", "cannot be read: " + p.err.Error()}})
	case p.p.CertErr != nil:
		w.section("tls.crt", [][2]string{{"", p.p.CertErr.Error()}})
	default:
		chain := p.chain
		if p.chainErr != nil {
			chain = []*x509.Certificate{p.p.Leaf}
		}
		for i, crt := range chain {
			title := fmt.Sprintf("tls.crt [%d]", i)
			if i == 0 {
				title += " leaf"
			}
			f := certFields(crt, now)
			if i+1 < len(chain) {
				f = append(f, [2]string{"Signed by [" + strconv.Itoa(i+1) + "]", signedBy(crt, chain[i+1])})
			}
			w.section(title, f)
		}
		if p.chainErr != nil {
			w.section("tls.crt (rest of the chain)", [][2]string{{"", "cannot be read: " + p.chainErr.Error()}})
		}
	}
	if p.p != nil {
		w.section("tls.key", [][2]string{{"", keyMatch(p.p)}})
	}
	if _, ok := sec.Data["ca.crt"]; ok {
		switch {
		case p.caErr != nil:
			w.section("ca.crt", [][2]string{{"", "cannot be read: " + p.caErr.Error()}})
		case p.err != nil:
		default:
			for i, crt := range p.ca {
				f := certFields(crt, now)
				if leaf := p.leaf(); leaf != nil && len(p.chain) > 0 {
					f = append(f, [2]string{"Signed the chain's top", signedBy(p.chain[len(p.chain)-1], crt)})
				}
				w.section(fmt.Sprintf("ca.crt [%d]", i), f)
			}
		}
	}
	w.section("Certificate", owningFields(ctx, c, sec, now, cfg))
	return w.err
}

// owningFields: the Certificate that names the Secret, and whether the
// Secret holds what it asks, by the controller's decision.
func owningFields(ctx context.Context, c client.Reader, sec *corev1.Secret, now time.Time, cfg certificate.Config) [][2]string {
	name := sec.Annotations[cmapi.CertificateNameKey]
	if name == "" {
		if ref := metav1.GetControllerOfNoCopy(sec); ref != nil && ref.Kind == cmapi.CertificateKind {
			name = ref.Name
		}
	}
	if name == "" || certificate.ValidateObjectName(name) != nil {
		return [][2]string{{"", "none: no " + cmapi.CertificateNameKey + " annotation names one"}}
	}
	g, err := gather(ctx, c, sec.Namespace, name)
	if err != nil {
		return [][2]string{{"Name", name}, {"", err.Error()}}
	}
	f := [][2]string{{"Name", sec.Namespace + "/" + name}}
	if g.crt.Spec.SecretName != sec.Name {
		return append(f, [2]string{"", "names secret " + g.crt.Spec.SecretName + ", not this one"})
	}
	if len(g.notServed) > 0 {
		return append(f, [2]string{"", "the operator refuses its spec: " + notServedText(g)})
	}
	res := g.decide(now, cfg)
	if res.Err != nil {
		return append(f, [2]string{"", "no decision can be made: " + res.Err.Error()})
	}
	t := res.Steps[0]
	verdict := t.Reason + ": " + t.Message
	switch t.Reason {
	case certificate.ReasonUpToDate:
		verdict = "yes: the secret holds what the certificate asks for (" + verdict + ")"
	case certificate.ReasonRenewing:
		verdict = "yes, and due for renewal (" + verdict + ")"
	case certificate.ReasonIssuingInProgress, certificate.ReasonBackoff, certificate.ReasonSecretNotCaughtUp:
		// The trigger stood aside: judge the secret with the checks alone.
		verdict = t.Reason + ": " + t.Message
	default:
		verdict = "no: " + verdict
	}
	f = append(f, [2]string{"Holds what it asks", verdict})
	if r := res.Steps[len(res.Steps)-1]; r.Stage == certificate.StageReadiness {
		f = append(f, [2]string{"Ready (decided now)", r.Reason + ": " + r.Message})
	}
	return f
}

func certFields(c *x509.Certificate, now time.Time) [][2]string {
	f := leafFields(c, now)
	if u := keyUsages(c); u != "" {
		f = append(f, [2]string{"Key usage", u})
	}
	if c.BasicConstraintsValid && c.IsCA {
		f = append(f, [2]string{"CA", "yes"})
	}
	sum := sha256.Sum256(c.Raw)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02X", b)
	}
	f = append(f, [2]string{"SHA-256", strings.Join(hexes, ":")})
	return f
}

func signedBy(child, parent *x509.Certificate) string {
	if err := child.CheckSignatureFrom(parent); err != nil {
		return "no: " + err.Error()
	}
	return "yes"
}

func publicKeyText(c *x509.Certificate) string {
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		return "RSA " + strconv.Itoa(k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return c.PublicKeyAlgorithm.String()
}

var keyUsageNames = []struct {
	u    x509.KeyUsage
	name string
}{
	{x509.KeyUsageDigitalSignature, "digital signature"}, {x509.KeyUsageContentCommitment, "content commitment"},
	{x509.KeyUsageKeyEncipherment, "key encipherment"}, {x509.KeyUsageDataEncipherment, "data encipherment"},
	{x509.KeyUsageKeyAgreement, "key agreement"}, {x509.KeyUsageCertSign, "cert sign"}, {x509.KeyUsageCRLSign, "crl sign"},
	{x509.KeyUsageEncipherOnly, "encipher only"}, {x509.KeyUsageDecipherOnly, "decipher only"},
}

var extKeyUsageNames = map[x509.ExtKeyUsage]string{
	x509.ExtKeyUsageAny: "any", x509.ExtKeyUsageServerAuth: "server auth", x509.ExtKeyUsageClientAuth: "client auth",
	x509.ExtKeyUsageCodeSigning: "code signing", x509.ExtKeyUsageEmailProtection: "email protection",
	x509.ExtKeyUsageIPSECEndSystem: "ipsec end system", x509.ExtKeyUsageIPSECTunnel: "ipsec tunnel",
	x509.ExtKeyUsageIPSECUser: "ipsec user", x509.ExtKeyUsageTimeStamping: "timestamping", x509.ExtKeyUsageOCSPSigning: "ocsp signing",
}

func keyUsages(c *x509.Certificate) string {
	var names []string
	for _, k := range keyUsageNames {
		if c.KeyUsage&k.u != 0 {
			names = append(names, k.name)
		}
	}
	for _, e := range c.ExtKeyUsage {
		if n, ok := extKeyUsageNames[e]; ok {
			names = append(names, n)
		} else {
			names = append(names, "extended usage "+strconv.Itoa(int(e)))
		}
	}
	for _, o := range c.UnknownExtKeyUsage {
		names = append(names, o.String())
	}
	return strings.Join(names, ", ")
}

// quoteEmpty shows an empty value as "".
func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
