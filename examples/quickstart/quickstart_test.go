package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"github.com/certlife/certlife/keys"
)

// The quickstart runs end to end; the key it writes is the certificate's,
// and the certificate chains to Pebble's root.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Out: t.TempDir(), W: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	crt, err := os.ReadFile(res.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(res.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := keys.ParseSecretData(map[string][]byte{keys.SecretCertificate: crt, keys.SecretPrivateKey: key})
	if err != nil || !p.KeyMatches {
		t.Fatalf("tls.key is not tls.crt's key: %v", err)
	}
	rootPEM, err := os.ReadFile(res.RootFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatal("no root in pebble-root.pem")
	}
	inter := x509.NewCertPool()
	rest := crt
	for first := true; ; first = false {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if !first {
			c, _ := x509.ParseCertificate(b.Bytes)
			inter.AddCert(c)
		}
	}
	if _, err := p.Leaf.Verify(x509.VerifyOptions{DNSName: Name, Roots: roots, Intermediates: inter, CurrentTime: res.Now}); err != nil {
		t.Fatalf("tls.crt does not chain to Pebble's root: %v", err)
	}
	if info, _ := os.Stat(res.KeyFile); info.Mode().Perm() != 0o600 {
		t.Fatalf("tls.key is readable by others: %v", info.Mode())
	}
	text := out.String()
	for _, want := range []string{"trigger        DoesNotExist", "trigger        Renewing", "key rotated: true", "trigger        Backoff",
		"RenewalDeferred", "ManualTrigger", "revision 5"} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, text)
		}
	}
	if res.Revisions != 5 || res.Failures < 2 {
		t.Fatalf("%d revisions, %d failures", res.Revisions, res.Failures)
	}
}
