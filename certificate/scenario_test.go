package certificate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
)

var update = flag.Bool("update", false, "rewrite the golden scenario files under testdata/scenarios")

// describe renders one Reconcile pass deterministically: time since t0,
// certificate, the stage and reason of the headline, actions, the message,
// and why the certificate is being issued while it is.
func describe(now time.Time, c *Certificate, res Result) string {
	acts := make([]string, len(res.Actions))
	for i, a := range res.Actions {
		acts[i] = a.String()
	}
	line := fmt.Sprintf("%-10s %-5s %-14s %-22s %s", "+"+now.Sub(t0).String(), c.Name, res.Stage, res.Reason, strings.Join(acts, " "))
	out := strings.TrimRight(line, " ") + "\n" + strings.Repeat(" ", 11) + "why: " + res.Message + "\n"
	if res.IssuanceReason != "" {
		out += strings.Repeat(" ", 11) + "issuing: " + res.IssuanceReason + "\n"
	}
	return out
}

// scenarioHost wraps the test host with a trace in describe's form.
type scenarioHost struct {
	*testHost
	out strings.Builder
}

// pass runs one Reconcile per certificate and carries out the actions,
// without letting the CA answer.
func (h *scenarioHost) pass() (quiet bool) {
	quiet = true
	for _, c := range h.certs {
		res := Reconcile(h.snapshotOf(c), h.now, h.cfg)
		h.out.WriteString(describe(h.now, c, res))
		for _, a := range res.Actions {
			h.apply(c, a)
		}
		quiet = quiet && len(res.Actions) == 0
	}
	return quiet
}

// settle passes, with the CA answering after each, until a pass is quiet;
// it returns the first certificate's requeue time.
func (h *scenarioHost) settle() time.Time {
	for i := 0; i < 20; i++ {
		if h.pass() {
			return Reconcile(h.snapshotOf(h.cert), h.now, h.cfg).RequeueAt
		}
		h.sign()
	}
	h.t.Fatalf("no steady state:\n%s", h.out.String())
	return time.Time{}
}

func (h *scenarioHost) note(format string, args ...any) {
	fmt.Fprintf(&h.out, "# "+format+"\n", args...)
}

var scenarios = map[string]func(h *scenarioHost){
	"first-issuance": func(h *scenarioHost) {
		h.note("a new certificate with no secret")
		h.settle()
	},
	"renewal": func(h *scenarioHost) {
		at := h.settle()
		h.note("the clock reaches the renewal time")
		h.now = at
		h.settle()
	},
	"spec-change-mid-issuance": func(h *scenarioHost) {
		h.note("issuance starts; the CA has not answered yet")
		h.pass()
		h.pass()
		h.note("the user adds a DNS name before the CA answers")
		h.cert.Spec.DNSNames = append(h.cert.Spec.DNSNames, "api.web.example")
		h.settle()
	},
	"spec-change-after-the-ca-answered": func(h *scenarioHost) {
		h.note("issuance starts and the CA answers")
		h.pass()
		h.pass()
		h.sign()
		h.note("before the host's next pass, the user changes the usages: the answer is not written")
		h.cert.Spec.Usages = []keys.Usage{keys.UsageDigitalSignature, keys.UsageClientAuth}
		h.settle()
	},
	"secret-drifted": func(h *scenarioHost) {
		h.settle()
		h.now = h.now.Add(time.Hour)
		h.note("someone strips the secret's annotations, and the spec asks for a combined PEM")
		h.secrets[h.cert.Spec.SecretName].Annotations = nil
		h.cert.Spec.AdditionalOutputFormats = []OutputFormat{OutputCombinedPEM}
		h.cert.Generation++
		h.settle()
	},
	"failure-backoff-success": func(h *scenarioHost) {
		h.fail = true
		h.note("the CA fails")
		at := h.settle()
		h.note("the backoff has passed; the CA still fails")
		h.now = at
		at = h.settle()
		h.fail = false
		h.note("the backoff has passed; the CA is back")
		h.now = at
		h.settle()
	},
	"wrong-key-from-issuer": func(h *scenarioHost) {
		h.wrongKey = true
		h.note("the issuer certifies another key than the CSR's")
		at := h.settle()
		h.now = at
		h.wrongKey = false
		h.note("the backoff has passed; the issuer is fixed")
		h.settle()
	},
	"manual-trigger-during-backoff": func(h *scenarioHost) {
		h.fail = true
		h.settle()
		h.fail = false
		h.now = h.now.Add(10 * time.Minute)
		h.note("ten minutes into the 1h backoff, a user sets Issuing=True")
		h.cert.Status.Conditions = setCondition(h.cert.Status.Conditions,
			Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonManualTrigger, Message: "renew now"}, h.now, h.cert.Generation)
		h.settle()
	},
	"rotation-never": func(h *scenarioHost) {
		h.cert.Spec.PrivateKey.RotationPolicy = keys.RotationNever
		at := h.settle()
		h.note("renewal with rotation policy Never reuses the key")
		h.now = at
		h.settle()
	},
	"secret-deleted-by-hand": func(h *scenarioHost) {
		h.settle()
		h.now = h.now.Add(time.Hour)
		h.note("someone deletes the secret")
		delete(h.secrets, h.cert.Spec.SecretName)
		h.settle()
	},
	"garbage-in-secret": func(h *scenarioHost) {
		h.settle()
		h.now = h.now.Add(time.Hour)
		h.note("someone writes garbage into tls.crt")
		h.secrets[h.cert.Spec.SecretName].Data[keys.SecretCertificate] = []byte("garbage")
		h.settle()
	},
	"two-certificates-sharing-a-secret": func(h *scenarioHost) {
		h.settle()
		h.now = h.now.Add(time.Hour)
		younger := testCertificate()
		younger.Name, younger.UID, younger.CreationTimestamp = "other", "uid-other", h.now
		younger.Spec.DNSNames = []string{"other.example"}
		younger.Spec.CommonName = "other.example"
		h.certs = append(h.certs, younger)
		h.note("a younger certificate names the same secret")
		h.settle()
	},
}

// TestScenarios drives lifecycle scenarios through the test host and
// compares their traces with testdata/scenarios/*.txt (go test -update
// rewrites them). Each scenario also checks its own ending.
func TestScenarios(t *testing.T) {
	for name, run := range scenarios {
		t.Run(name, func(t *testing.T) {
			h := &scenarioHost{testHost: newTestHost(t)}
			run(h)
			checkEnding(t, name, h)
			path := filepath.Join("testdata", "scenarios", name+".txt")
			got := h.out.String()
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(want) != got {
				t.Fatalf("trace differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// checkEnding asserts what every scenario must end with, so the golden
// files cannot freeze a wrong outcome.
func checkEnding(t *testing.T, name string, h *scenarioHost) {
	t.Helper()
	c := h.cert
	if r := c.Status.Condition(ConditionReady); r == nil || r.Status != StatusTrue {
		t.Fatalf("%s: the certificate is not Ready at the end:\n%s", name, h.out.String())
	}
	if c.Status.LastFailureTime != nil || c.Status.NextPrivateKeySecretName != "" {
		t.Fatalf("%s: failure or next-key fields left in status: %+v", name, c.Status)
	}
	p, err := keys.ParseSecretData(h.secrets[c.Spec.SecretName].Data)
	if err != nil || !p.KeyMatches || keys.CompareCertificateNames(p.Leaf, c.Spec.Template()) != nil {
		t.Fatalf("%s: the secret does not hold a matching certificate for the spec", name)
	}
	if cur := newPass(h.snapshot()).current(); cur == nil || requestMismatch(cur, &c.Spec, nil, "") != "" {
		t.Fatalf("%s: the current revision's request does not match the spec", name)
	}
	if d := newPass(h.snapshot()).drift; d != nil {
		t.Fatalf("%s: the secret drifted: %v", name, d)
	}
	if owner := h.secrets[c.Spec.SecretName].Annotations[AnnotationCertificateName]; owner != c.Name {
		t.Fatalf("%s: the secret belongs to %q", name, owner)
	}
	for _, o := range h.certs[1:] {
		if r := o.Status.Condition(ConditionReady); r != nil && r.Status == StatusTrue {
			t.Fatalf("%s: certificate %s is Ready on a secret it does not own", name, o.Name)
		}
	}
}
