package acmeclient_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
)

// renderings are the ways fmt or a careless log could spell a secret's
// bytes: raw, hex either case, base64, and decimal as %v and %d print a
// byte slice.
func renderings(b []byte) []string {
	dec := strings.Trim(fmt.Sprint(b), "[]")
	return []string{string(b), hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), dec, strings.ReplaceAll(dec, " ", ",")}
}

// Config, Client and EAB redact themselves under every fmt verb, and so do
// the structs that hold them: the account key (Ed25519, whose private key
// is a byte slice fmt would print byte by byte, and ECDSA) and the EAB's
// HMAC key (RFC 8555 §7.3.4) never appear, in any spelling, in what fmt
// prints.
func TestSecretsRedactUnderEveryVerb(t *testing.T) {
	seed := bytes.Repeat([]byte{0xa7, 0x3c, 0x5e, 0xd1}, ed25519.SeedSize/4)
	edKey := ed25519.NewKeyFromSeed(seed)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	hmacKey := []byte("hmac-0123456789abcdef-secret-key")

	var secrets []string
	for _, b := range [][]byte{seed, edKey, hmacKey, ecKey.D.Bytes()} {
		secrets = append(secrets, renderings(b)...)
	}
	secrets = append(secrets, ecKey.D.String(), ecKey.D.Text(16))

	extra := "%v" // one verb for two arguments: fmt prints the second as EXTRA
	verbD, verbX := "%d", "%x"
	for keyName, key := range map[string]crypto.Signer{"Ed25519": edKey, "ECDSA": ecKey} {
		cfg := acmeclient.Config{DirectoryURL: "https://acme.example/dir", Key: key, UserAgent: "test"}
		client, err := acmeclient.New(cfg)
		require.NoError(t, err)
		eab := acmeclient.EAB{KeyID: "kid-1", Key: hmacKey}
		opts := acmeclient.AccountOptions{Contact: []string{"mailto:ops@example.com"}, AgreeToTerms: true, EAB: &eab}
		issuerCfg := acmeclient.IssuerConfig{Client: client, Account: opts, Store: acmeclient.NewMemoryStore(),
			Solvers: acmeclient.Solvers{HTTP01: &acmeclient.HTTP01Handler{}}}
		issuer, err := acmeclient.NewIssuer(issuerCfg)
		require.NoError(t, err)
		type holder struct {
			Config    acmeclient.Config
			ConfigPtr *acmeclient.Config
			EAB       acmeclient.EAB
			EABPtr    *acmeclient.EAB
			Account   acmeclient.AccountOptions
			Client    *acmeclient.Client
			Issuer    acmeclient.IssuerConfig
			Any       []any
		}
		h := holder{Config: cfg, ConfigPtr: &cfg, EAB: eab, EABPtr: &eab, Account: opts, Client: client, Issuer: issuerCfg,
			Any: []any{cfg, eab, key == nil}}
		values := map[string]any{"Config": cfg, "*Config": &cfg, "EAB": eab, "*EAB": &eab, "AccountOptions": opts,
			"*Client": client, "IssuerConfig": issuerCfg, "*Issuer": issuer, "a struct holding them": h, "a pointer to it": &h}

		var outs []string
		for name, v := range values {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "% x", "%#x", "%08d", "%-40v", "%.3s", "%t", "%z"} {
				outs = append(outs, keyName+" "+name+" "+verb+": "+fmt.Sprintf(verb, v))
			}
			outs = append(outs, keyName+" "+name+" Sprint: "+fmt.Sprint(v), keyName+" "+name+" Sprintln: "+fmt.Sprintln(v, v),
				keyName+" "+name+" extra argument: "+fmt.Sprintf(extra, 1, v))
		}
		for _, out := range outs {
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Fatalf("a secret is printed (%q): %s", s, out)
				}
			}
		}
		assert.Contains(t, fmt.Sprintf(verbD, cfg), "(redacted)", "the config says what key it holds, without it")
		assert.Equal(t, "EAB{kid-1, key redacted}", fmt.Sprintf(verbX, eab))
	}
}
