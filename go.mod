module github.com/certlife/certlife

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/pavlo-v-chernykh/keystore-go/v4 v4.5.0
	golang.org/x/crypto v0.58.0
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab
	software.sslmate.com/src/go-pkcs12 v0.7.4
)
