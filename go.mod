module github.com/certlife/certlife

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/miekg/dns v1.1.62
	github.com/pavlo-v-chernykh/keystore-go/v4 v4.5.0
	golang.org/x/crypto v0.58.0
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab
	software.sslmate.com/src/go-pkcs12 v0.7.4
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

require (
	github.com/go-jose/go-jose/v4 v4.1.4
	github.com/letsencrypt/challtestsrv v1.4.2 // indirect
	github.com/letsencrypt/pebble/v2 v2.10.1
	golang.org/x/mod v0.24.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sync v0.14.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.33.0 // indirect
)
