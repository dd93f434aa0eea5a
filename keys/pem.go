package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
)

// DecodePEM is pem.Decode with a fast path for the plain blocks Go and
// every CA write: "-----BEGIN TYPE-----", base64 lines, "-----END
// TYPE-----", no headers. Such a block decodes in well under half the time
// (no copy of the body to strip whitespace; the base64 decoder skips line
// breaks itself). Anything else — headers, spaces, leading text, a
// mismatched end — goes to pem.Decode, so the result is always
// pem.Decode's (FuzzDecodePEM holds the two to each other).
func DecodePEM(data []byte) (p *pem.Block, rest []byte) {
	if b, r, ok := decodePlainPEM(data); ok {
		return b, r
	}
	return pem.Decode(data)
}

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("\n-----END ")
	pemDash  = []byte("-----")
)

func decodePlainPEM(data []byte) (*pem.Block, []byte, bool) {
	if !bytes.HasPrefix(data, pemBegin) {
		return nil, nil, false
	}
	line := bytes.IndexByte(data, '\n')
	if line < 0 {
		return nil, nil, false
	}
	head := data[len(pemBegin):line]
	if !bytes.HasSuffix(head, pemDash) {
		return nil, nil, false
	}
	typ := head[:len(head)-len(pemDash)]
	if len(typ) == 0 || !plainType(typ) {
		return nil, nil, false
	}
	body := data[line+1:]
	end := bytes.Index(body, pemEnd)
	if end < 0 {
		return nil, nil, false
	}
	b64 := body[:end]
	// Only base64 and line feeds: anything else (headers' colons, spaces,
	// tabs, carriage returns) is pem.Decode's to judge.
	for _, c := range b64 {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '\n') {
			return nil, nil, false
		}
	}
	tail := body[end+len(pemEnd):]
	if !bytes.HasPrefix(tail, typ) || !bytes.HasPrefix(tail[len(typ):], pemDash) {
		return nil, nil, false
	}
	tail = tail[len(typ)+len(pemDash):]
	switch {
	case len(tail) == 0:
	case tail[0] == '\n':
		tail = tail[1:]
	default:
		return nil, nil, false
	}
	der := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(der, b64)
	if err != nil {
		return nil, nil, false
	}
	return &pem.Block{Type: string(typ), Bytes: der[:n]}, tail, true
}

// plainType reports a type of capital letters, digits and single spaces,
// as "CERTIFICATE REQUEST" and "EC PRIVATE KEY" are.
func plainType(t []byte) bool {
	for i, c := range t {
		switch {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ' ' && i > 0 && i < len(t)-1 && t[i-1] != ' ':
		default:
			return false
		}
	}
	return true
}
