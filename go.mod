module github.com/certlife/certlife

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/letsencrypt/pebble/v2 v2.10.1 // indirect
	github.com/miekg/dns v1.1.73 // indirect
	github.com/pavlo-v-chernykh/keystore-go/v4 v4.5.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab // indirect
	software.sslmate.com/src/go-pkcs12 v0.7.4 // indirect
)
