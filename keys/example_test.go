package keys_test

import (
	"crypto/rand"
	"fmt"

	"github.com/certlife/certlife/keys"
)

// A host carries out a "generate key" and a "create request" action: it
// generates the key the spec asks for, checks it, and builds the request.
func Example() {
	spec := keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384}
	if err := spec.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	key, err := keys.Generate(rand.Reader, spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("mismatches:", keys.SpecMismatches(key.Public(), spec))

	tmpl := keys.RequestTemplate{CommonName: "app.example", DNSNames: []string{"app.example", "www.app.example"}}
	csrPEM, err := keys.BuildCSR(rand.Reader, tmpl, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	csr, _ := keys.ParseCSR(csrPEM)
	fmt.Println("request matches template:", keys.CompareCSR(csr, tmpl) == nil)

	tmpl.DNSNames = append(tmpl.DNSNames, "api.app.example")
	for _, d := range keys.CompareCSR(csr, tmpl) {
		fmt.Println("difference:", d)
	}
	// Output:
	// mismatches: []
	// request matches template: true
	// difference: dnsNames: want [api.app.example app.example www.app.example], have [app.example www.app.example]
}

func ExampleKeySpec_Validate() {
	err := keys.KeySpec{Algorithm: keys.AlgorithmRSA, Size: 1024}.Validate()
	fmt.Println(err)
	// Output: keys: invalid key spec: size: 1024 is not an RSA size between 2048 and 8192
}

func ExampleParseSecretData() {
	p, err := keys.ParseSecretData(map[string][]byte{"tls.key": []byte("not a key")})
	fmt.Println(err)
	fmt.Println(p.Leaf == nil, p.Key == nil)
	// Output:
	// keys: tls.crt: missing
	// keys: tls.key: keys: cannot decode private key: no PEM block found
	// true true
}
