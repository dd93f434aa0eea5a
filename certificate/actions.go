package certificate

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/keys"
)

// GenerateKey asks the host to create the secret SecretName holding the
// next private key: labelled LabelNextPrivateKey="true", owned by the
// certificate (OwnerUID), with the key PEM in tls.key. The key is generated
// with keys.Generate(rand, Spec) — or, when ReuseFrom is set (rotation
// policy Never), copied from ReuseFrom's tls.key.
//
// The name is deterministic: a create that fails with AlreadyExists means an
// earlier pass (seen by a stale cache) made it, and is success.
type GenerateKey struct {
	SecretName string
	OwnerUID   string
	Spec       keys.KeySpec
	ReuseFrom  string
}

// DeleteSecret asks the host to delete a secret it owns (a next-private-key
// secret). NotFound is success.
type DeleteSecret struct {
	Name   string
	Reason string
}

// CreateRequest asks the host to create Request after filling
// Request.Spec.Request with keys.BuildCSR(rand, Template, key), where key is
// tls.key of the secret KeySecretName. The name is deterministic
// (<certificate>-<revision>): AlreadyExists is success. The host keeps the
// request's annotations: AnnotationCreatedAt times the request on the
// decisions' own clock, whatever clock sets its creationTimestamp.
//
// Replaces is the ARI certificate identifier (RFC 9773 §4.1) of the
// certificate this request renews, set when the secret holds a
// certificate from the same issuer (name, kind and group) that shares at
// least one identifier with the request; the request carries it too, as
// AnnotationReplaces, so an ACME issuer names it in its order. Empty
// otherwise. The host needs to do nothing with it.
type CreateRequest struct {
	Request       CertificateRequest
	KeySecretName string
	Template      keys.RequestTemplate
	Replaces      string
}

// DeleteRequest asks the host to delete a request. NotFound is success.
// Once it is deleted (or found missing), the host tells the issuer that
// IssuerRef names, when it keeps state per request (Forgetter.Forget), so
// that nothing the issuer keeps for the request (an ACME order, what its
// challenges present) outlives it.
type DeleteRequest struct {
	Name      string
	IssuerRef IssuerRef
	Reason    string
}

// WriteSecret asks the host to create or update the secret Name with the
// data keys.SecretData(rand, key, Chain, CA, Output) gives, where key is
// tls.key of the secret KeySecretName, and to merge Labels and Annotations
// into the secret's metadata. The data replaces the secret's data whole.
// The secret is owned by the certificate (OwnerUID).
//
// Two kinds of write share the action. After an issuance KeySecretName is
// the next private key's secret and Chain and CA are the request's answer.
// A repair of a secret that drifted (ReasonSecretRepair) rewrites the
// secret from itself: KeySecretName is Name, and Chain and CA are the
// secret's own tls.crt and ca.crt.
//
// ResourceVersion, when set, is the version of the secret the decision
// read: the host writes only if the secret is still at that version (a
// conflict ends the pass, and the next decision reads the newer secret), so
// a decision made on a stale read never overwrites a newer secret. Empty
// means the decision saw no secret: the host creates it, and a secret
// that exists by then (AlreadyExists, or found where the decision found
// none) is a conflict too — never written blindly — so that the next
// decision reads it and judges whether it may be written at all
// (ReasonSecretNotOwned).
//
// Ordering: before the UpdateStatus of the same result, which records the
// new revision; a crash in between re-writes the same secret on the next
// pass.
type WriteSecret struct {
	Name            string
	OwnerUID        string
	KeySecretName   string
	Chain, CA       []byte
	Output          keys.OutputSpec
	Labels          map[string]string
	Annotations     map[string]string
	ResourceVersion string
}

// WriteTemporaryCertificate asks the host to write a temporary
// certificate into the secret Name while an issuance runs and the secret
// holds no usable certificate and key (Spec.IssueTemporaryCertificate):
// the data keys.SecretData(rand, key, chain, nil, Output) gives, where key
// is tls.key of the secret KeySecretName (the next private key) and chain
// is keys.TemporaryCertificate(rand, key, Template, NotBefore, NotAfter),
// with Labels and Annotations merged into the secret's metadata, owned by
// the certificate (OwnerUID), and only over ResourceVersion, as
// WriteSecret is. The certificate is not Ready while the secret holds it;
// the issued certificate replaces it.
//
// Labels and Annotations are the secretTemplate's and
// AnnotationCertificateName: no issuer annotation, as no issuer signed it.
// NotBefore is the decision's time and NotAfter NotBefore plus
// spec.duration (DefaultDuration when unset).
type WriteTemporaryCertificate struct {
	Name                string
	OwnerUID            string
	KeySecretName       string
	Template            keys.RequestTemplate
	NotBefore, NotAfter time.Time
	Output              keys.OutputSpec
	Labels              map[string]string
	Annotations         map[string]string
	ResourceVersion     string
}

func (GenerateKey) isAction()   {}
func (DeleteSecret) isAction()  {}
func (CreateRequest) isAction() {}
func (DeleteRequest) isAction() {}
func (WriteSecret) isAction()   {}

func (WriteTemporaryCertificate) isAction() {}

func (a GenerateKey) String() string {
	if a.ReuseFrom != "" {
		return fmt.Sprintf("GenerateKey{%s, reuse key of %s}", a.SecretName, a.ReuseFrom)
	}
	return fmt.Sprintf("GenerateKey{%s, %s %d}", a.SecretName, a.Spec.Algorithm, a.Spec.Size)
}
func (a DeleteSecret) String() string  { return fmt.Sprintf("DeleteSecret{%s: %s}", a.Name, a.Reason) }
func (a CreateRequest) String() string { return fmt.Sprintf("CreateRequest{%s}", a.Request.Name) }
func (a DeleteRequest) String() string { return fmt.Sprintf("DeleteRequest{%s: %s}", a.Name, a.Reason) }
func (a WriteTemporaryCertificate) String() string {
	return fmt.Sprintf("WriteTemporaryCertificate{%s, key of %s}", a.Name, a.KeySecretName)
}

func (a WriteSecret) String() string {
	if a.KeySecretName == a.Name {
		return fmt.Sprintf("WriteSecret{%s, repair}", a.Name)
	}
	return fmt.Sprintf("WriteSecret{%s}", a.Name)
}
