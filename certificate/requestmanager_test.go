package certificate

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// putLeaf replaces the secret's certificate and key with a leaf for
// tmpl's DNS names and ips, signed by the fixture's CA, or self-signed
// (then it carries no authority key identifier).
func (f *fixture) putLeaf(s *Secret, tmpl *x509.Certificate, selfSigned bool) {
	f.t.Helper()
	key := f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	tmpl.SerialNumber = big.NewInt(serial.Add(1) + 100)
	tmpl.NotBefore, tmpl.NotAfter = t0.Add(-24*time.Hour), t0.Add(60*24*time.Hour)
	parent, signer := f.caCert, crypto.Signer(f.caKey)
	if selfSigned {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	require.NoError(f.t, err)
	keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
	require.NoError(f.t, err)
	s.Data[keys.SecretCertificate] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s.Data[keys.SecretPrivateKey] = keyPEM
}

// A renewal names the certificate it replaces (RFC 9773 §5, "replaces")
// only when a CA can accept it: the certificate in the secret comes from
// the spec's issuer — name, kind and group, as the secret's annotations
// say — and shares at least one identifier with the new request (a CA
// refuses an order whose identifiers share none with the replaced
// certificate), and it has an authority key identifier to name it by
// (RFC 9773 §4.1).
func TestCreateRequestReplaces(t *testing.T) {
	f := newFixture(t)
	const same = "the secret's certificate"
	tests := map[string]struct {
		mutate func(s *Snapshot)
		// want is same for the ARI identifier of the secret's certificate,
		// "" for none.
		want string
	}{
		"a renewal from the same issuer for the same names": {
			mutate: func(*Snapshot) {}, want: same,
		},
		"a name added: the others are shared": {
			mutate: func(s *Snapshot) {
				s.Certificate.Spec.DNSNames = append(s.Certificate.Spec.DNSNames, "api.web.example")
			},
			want: same,
		},
		"only the common name is shared": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.DNSNames = []string{"other.example"} },
			want:   same,
		},
		"a DNS name shared in other letter case": {
			mutate: func(s *Snapshot) {
				s.Certificate.Spec.CommonName, s.Certificate.Spec.DNSNames = "", []string{"WWW.Web.Example"}
			},
			want: same,
		},
		"an IP address shared, written another way": {
			mutate: func(s *Snapshot) {
				f.putLeaf(s.Secret, &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}, false)
				s.Certificate.Spec.CommonName, s.Certificate.Spec.DNSNames = "", nil
				s.Certificate.Spec.IPAddresses = []string{"::ffff:10.0.0.1"}
			},
			want: same,
		},
		"a renamed certificate shares no identifier": {
			mutate: func(s *Snapshot) {
				s.Certificate.Spec.CommonName, s.Certificate.Spec.DNSNames = "b.example", []string{"b.example"}
			},
		},
		"another issuer name": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.IssuerRef.Name = "new-ca" },
		},
		"another issuer kind": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.IssuerRef.Kind = "ClusterIssuer" },
		},
		"another issuer group": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.IssuerRef.Group = "example.com" },
		},
		"a secret without issuer annotations: no evidence of the issuer": {
			mutate: func(s *Snapshot) {
				for _, a := range []string{AnnotationIssuerName, AnnotationIssuerKind, AnnotationIssuerGroup} {
					delete(s.Secret.Annotations, a)
				}
			},
		},
		"a certificate without an authority key identifier cannot be named": {
			mutate: func(s *Snapshot) {
				f.putLeaf(s.Secret, &x509.Certificate{Subject: pkix.Name{CommonName: "web.example"}, DNSNames: []string{"web.example", "www.web.example"}}, true)
			},
		},
		"no secret": {
			mutate: func(s *Snapshot) { s.Secret = nil },
		},
		"a secret whose certificate does not decode": {
			mutate: func(s *Snapshot) { s.Secret.Data[keys.SecretCertificate] = []byte("garbage") },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.renewing()
			r.s.Requests = r.s.Requests[:1] // web-1 only: web-2 is made now
			r.s.Secret.Annotations = maps.Clone(r.s.Secret.Annotations)
			r.s.Secret.Data = maps.Clone(r.s.Secret.Data)
			tc.mutate(r.s)
			want := tc.want
			if want == same {
				leaf, err := firstCertificate(r.s.Secret.Data[keys.SecretCertificate])
				require.NoError(t, err)
				want, err = renewal.CertID(leaf)
				require.NoError(t, err)
			}

			res := RequestManager(r.s, t0, Config{})
			var creates []CreateRequest
			for _, a := range res.Actions {
				if c, ok := a.(CreateRequest); ok {
					creates = append(creates, c)
				}
			}
			require.Len(t, creates, 1, "%s: %s", res.Reason, res.Message)
			cr := creates[0]
			assert.Equal(t, "web-2", cr.Request.Name)
			assert.Equal(t, want, cr.Replaces)
			got, ok := cr.Request.Annotations[AnnotationReplaces]
			assert.Equal(t, want != "", ok, "the request carries %s only with an identifier", AnnotationReplaces)
			assert.Equal(t, want, got)
		})
	}
}

// A request the host could not build is never asked for: should
// Validate ever accept a template keys.CheckTemplate refuses, the
// certificate records a failed issuance with the reason and the field,
// the backoff applies, and the next attempt is stated, instead of a host
// failing on every pass with a status that says nothing.
func TestRequestThatCannotBeBuiltIsAFailure(t *testing.T) {
	f := newFixture(t)
	refusal := &keys.TemplateError{Field: "emailAddresses[0]", Message: `"öps@web.example" has non-ASCII characters`}
	checkTemplate = func(keys.RequestTemplate) error { return refusal }
	t.Cleanup(func() { checkTemplate = keys.CheckTemplate })
	r := f.renewing()
	r.s.Requests = r.s.Requests[:1] // web-2 would be made now

	res := Reconcile(r.s, t0, Config{})
	var st *Status
	for _, a := range res.Actions {
		switch a := a.(type) {
		case CreateRequest:
			t.Fatalf("a request the host cannot build is asked for: %v", a)
		case UpdateStatus:
			st = &a.Status
		}
	}
	require.NotNil(t, st, "nothing recorded: %s: %s", res.Reason, res.Message)
	assert.Equal(t, StageRequestManager, res.Stage)
	assert.Equal(t, ReasonRequestNotBuildable, res.Reason)
	iss := st.Condition(ConditionIssuing)
	require.NotNil(t, iss)
	assert.Equal(t, StatusFalse, iss.Status)
	assert.Equal(t, ReasonRequestNotBuildable, iss.Reason)
	assert.Contains(t, iss.Message, `no certificate signing request can be built from the spec: keys: emailAddresses[0]: "öps@web.example" has non-ASCII characters; next attempt at `)
	require.NotNil(t, st.LastFailureTime)
	assert.Equal(t, t0, *st.LastFailureTime)
	require.NotNil(t, st.FailedIssuanceAttempts)
	assert.Equal(t, 1, *st.FailedIssuanceAttempts)
	assert.True(t, res.RequeueAt.After(t0), "no next attempt: %v", res.RequeueAt)

	// The next pass, on the status written, waits for the backoff.
	r.s.Certificate.Status = *st
	again := Reconcile(r.s, t0.Add(time.Minute), Config{})
	assert.Equal(t, ReasonBackoff, again.Steps[0].Reason, "%s: %s", again.Steps[0].Reason, again.Steps[0].Message)
	for _, a := range again.Actions {
		_, create := a.(CreateRequest)
		assert.False(t, create)
	}
}
