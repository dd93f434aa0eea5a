package certificate_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// A certificate whose secret does not exist yet: the trigger asks the host
// to set Issuing=True, and says why.
func ExampleTrigger() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	crt := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Generation: 1},
		Spec: certificate.Spec{
			SecretName: "web-tls",
			DNSNames:   []string{"web.example"},
			IssuerRef:  certificate.IssuerRef{Name: "letsencrypt"},
		},
	}
	res := certificate.Trigger(&certificate.Snapshot{Certificate: crt}, now, certificate.Config{})
	fmt.Println(res.Reason+":", res.Message)
	for _, a := range res.Actions {
		fmt.Println(a)
	}
	// Output:
	// DoesNotExist: secret web-tls does not exist
	// UpdateStatus{Issuing=True(DoesNotExist)}
}

func ExampleValidate() {
	pct := int32(150)
	err := certificate.Validate(&certificate.Spec{
		IssuerRef:             certificate.IssuerRef{Name: "ca"},
		DNSNames:              []string{"web.example"},
		Duration:              &certificate.Duration{Duration: 30 * time.Minute},
		RenewBeforePercentage: &pct,
	})
	fmt.Println(err)
	// Output:
	// spec.secretName: is required
	// spec.duration: 30m0s is under the minimum of 1h0m0s
	// spec.renewBeforePercentage: 150 is outside (0, 100)
}

// A host loop from nothing to a Ready certificate: storage is two maps, a
// small CA answers each request at once, and every action is carried out as
// its doc says. Each pass prints the stage that acted, its reason, and why
// the certificate is being issued.
func ExampleReconcile() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	crt := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Generation: 1},
		Spec: certificate.Spec{
			SecretName: "web-tls", DNSNames: []string{"web.example"},
			IssuerRef:  certificate.IssuerRef{Name: "ca"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA},
		},
	}
	secrets := map[string]*certificate.Secret{}
	requests := map[string]*certificate.CertificateRequest{}
	ca := newExampleCA()

	for pass := 1; pass <= 10; pass++ {
		// 1. Gather.
		snap := &certificate.Snapshot{Certificate: crt, Secret: secrets[crt.Spec.SecretName]}
		for _, name := range slices.Sorted(maps.Keys(secrets)) {
			if s := secrets[name]; s.Labels[certificate.LabelNextPrivateKey] == "true" {
				snap.NextPrivateKeySecrets = append(snap.NextPrivateKeySecrets, s)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(requests)) {
			snap.Requests = append(snap.Requests, requests[name])
		}
		// 2. Decide.
		res := certificate.Reconcile(snap, now, certificate.Config{})
		if len(res.Actions) == 0 {
			break
		}
		fmt.Printf("pass %d: %s %s (issuing: %q)\n", pass, res.Stage, res.Reason, res.IssuanceReason)
		// 3. Carry out, in order.
		for _, a := range res.Actions {
			switch a := a.(type) {
			case certificate.GenerateKey:
				key, _ := keys.Generate(rand.Reader, a.Spec)
				pemKey, _ := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
				secrets[a.SecretName] = &certificate.Secret{
					ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, OwnerUID: a.OwnerUID, Labels: map[string]string{certificate.LabelNextPrivateKey: "true"}},
					Data:       map[string][]byte{keys.SecretPrivateKey: pemKey},
				}
			case certificate.CreateRequest:
				key, _ := keys.DecodePrivateKey(secrets[a.KeySecretName].Data[keys.SecretPrivateKey])
				req := a.Request
				req.Spec.Request, _ = keys.BuildCSR(rand.Reader, a.Template, key)
				req.CreationTimestamp = now
				ca.answer(&req, now) // this CA answers at once
				requests[req.Name] = &req
			case certificate.WriteSecret:
				key, _ := keys.DecodePrivateKey(secrets[a.KeySecretName].Data[keys.SecretPrivateKey])
				data, _ := keys.SecretData(rand.Reader, key, a.Chain, a.CA, a.Output)
				secrets[a.Name] = &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: a.Name, OwnerUID: a.OwnerUID, Labels: a.Labels, Annotations: a.Annotations}, Data: data}
			case certificate.DeleteSecret:
				delete(secrets, a.Name)
			case certificate.DeleteRequest:
				delete(requests, a.Name)
			case certificate.UpdateStatus:
				crt.Status = a.Status
			}
		}
	}
	ready := crt.Status.Condition(certificate.ConditionReady)
	fmt.Printf("Ready=%s (%s), revision %d, secret annotated for %s\n", ready.Status, ready.Reason, *crt.Status.Revision,
		secrets["web-tls"].Annotations[certificate.AnnotationAltNames])
	// Output:
	// pass 1: keymanager WaitingForKey (issuing: "DoesNotExist")
	// pass 2: requestmanager RequestCreated (issuing: "DoesNotExist")
	// pass 3: issuing Issued (issuing: "")
	// pass 4: keymanager NotIssuing (issuing: "")
	// Ready=True (Ready), revision 1, secret annotated for web.example
}

// exampleCA signs requests with a self-signed ECDSA CA.
type exampleCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
}

func newExampleCA() *exampleCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example CA"},
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	cert, _ := x509.ParseCertificate(der)
	return &exampleCA{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// answer issues the request's CSR for 90 days and marks it issued.
func (ca *exampleCA) answer(r *certificate.CertificateRequest, now time.Time) {
	csr, _ := keys.ParseCSR(r.Spec.Request)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: csr.Subject, DNSNames: csr.DNSNames,
		NotBefore: now, NotAfter: now.Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	r.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	r.Status.CA = ca.pem
	r.Status.Conditions = []certificate.Condition{{Type: certificate.RequestConditionReady, Status: certificate.StatusTrue, Reason: certificate.RequestReasonIssued}}
}
