package plugin

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// writeStatus explains a Certificate at now: what it is, what its Secret
// holds, when and why it renews, what held back its last issuance, what
// its issuer is doing, and what the controller's decision — run here on
// what was gathered, with cfg — does next and when. It prints only public
// parts: names, conditions, certificates, never a private key or a
// keystore password.
func writeStatus(out io.Writer, g *gathered, now time.Time, cfg certificate.Config) error {
	w := &writer{w: out}
	crt, core := g.crt, g.snap.Certificate
	parsed := parseSecret(g)
	var res *certificate.Result
	if len(g.notServed) == 0 {
		r := g.decide(now, cfg)
		res = &r
	}

	w.section("Certificate "+crt.Namespace+"/"+crt.Name, certificateFields(g, now))
	w.section("Secret "+secretTitle(crt), secretFields(g, parsed, now))
	if res != nil {
		w.section("Renewal", renewalFields(g, parsed, res, now, cfg))
	}
	if f := failureFields(g, parsed, now, cfg); len(f) > 0 {
		w.section("Failed issuances", f)
	}
	for i := range g.requests {
		r := &g.requests[i]
		w.section("Request "+r.Name+" "+requestRole(core, r), requestFields(g, r, now))
	}
	if res == nil {
		w.section("Decision", [][2]string{{"", "not run: the operator refuses this Certificate's spec (InvalidSpec) before deciding anything:"}, {"", notServedText(g)}})
	} else {
		w.section(fmt.Sprintf("Decision at %s (certificate.Reconcile, the operator's default configuration)", now.UTC().Format(time.RFC3339)), decisionFields(g, res, now))
	}
	w.section("Next", nextFields(g, res, now))
	return w.err
}

func secretTitle(crt *cmapi.Certificate) string {
	if crt.Spec.SecretName == "" {
		return "(spec.secretName is empty)"
	}
	return crt.Namespace + "/" + crt.Spec.SecretName
}

// certificateFields: the spec in short, and the conditions.
func certificateFields(g *gathered, now time.Time) [][2]string {
	crt := g.crt
	ref := crt.Spec.IssuerRef
	kind, group := orDefault(ref.Kind, cmapi.IssuerKind), orDefault(ref.Group, "cert-manager.io")
	f := [][2]string{{"Issuer", fmt.Sprintf("%s %s (%s)", kind, ref.Name, group)}}
	if names := specNames(crt); names != "" {
		f = append(f, [2]string{"Names", names})
	}
	key := "RSA 2048 (default)"
	rotation := "Always"
	if k := crt.Spec.PrivateKey; k != nil {
		alg := orDefault(string(k.Algorithm), "RSA")
		key = alg
		if k.Size != 0 {
			key += " " + strconv.Itoa(k.Size)
		}
		rotation = orDefault(string(k.RotationPolicy), "Always")
	}
	f = append(f, [2]string{"Private key", key + ", rotation " + rotation})
	if d := crt.Spec.Duration; d != nil {
		f = append(f, [2]string{"Duration", span(d.Duration)})
	}
	f = append(f, [2]string{"Ready", conditionText(findCondition(crt, cmapi.CertificateConditionReady), now)})
	issuing := "- (no issuance running)"
	if c := findCondition(crt, cmapi.CertificateConditionIssuing); c != nil {
		issuing = conditionText(c, now)
	}
	f = append(f, [2]string{"Issuing", issuing})
	var others []cmapi.CertificateCondition
	for _, c := range crt.Status.Conditions {
		if c.Type != cmapi.CertificateConditionReady && c.Type != cmapi.CertificateConditionIssuing {
			others = append(others, c)
		}
	}
	slices.SortFunc(others, func(a, b cmapi.CertificateCondition) int { return strings.Compare(string(a.Type), string(b.Type)) })
	for i := range others {
		f = append(f, [2]string{string(others[i].Type), conditionText(&others[i], now)})
	}
	rev := "none yet"
	if r := crt.Status.Revision; r != nil {
		rev = strconv.Itoa(*r)
	}
	f = append(f, [2]string{"Revision", rev})
	if len(g.nextKeys) > 0 {
		f = append(f, [2]string{"Next private key", strings.Join(g.nextKeys, ", ") + " (key not shown)"})
	}
	if len(g.snap.OtherOwners) > 0 {
		var names []string
		for _, o := range g.snap.OtherOwners {
			names = append(names, o.Name)
		}
		slices.Sort(names)
		f = append(f, [2]string{"Same secret", "also named by " + strings.Join(names, ", ")})
	}
	return f
}

func specNames(crt *cmapi.Certificate) string {
	var parts []string
	s := &crt.Spec
	if s.CommonName != "" {
		parts = append(parts, "CN "+s.CommonName)
	}
	if s.LiteralSubject != "" {
		parts = append(parts, "subject "+s.LiteralSubject)
	}
	add := func(label string, vs []string) {
		if len(vs) > 0 {
			parts = append(parts, label+" "+strings.Join(vs, ", "))
		}
	}
	add("DNS", s.DNSNames)
	add("IP", s.IPAddresses)
	add("URI", s.URIs)
	add("email", s.EmailAddresses)
	if s.IsCA {
		parts = append(parts, "a CA")
	}
	return strings.Join(parts, "; ")
}

func findCondition(crt *cmapi.Certificate, t cmapi.CertificateConditionType) *cmapi.CertificateCondition {
	for i := range crt.Status.Conditions {
		if crt.Status.Conditions[i].Type == t {
			return &crt.Status.Conditions[i]
		}
	}
	return nil
}

func conditionText(c *cmapi.CertificateCondition, now time.Time) string {
	if c == nil {
		return "-"
	}
	s := string(c.Status)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.LastTransitionTime != nil {
		s += " since " + stamp(c.LastTransitionTime.Time, now)
	}
	if c.Message != "" {
		s += "\n" + c.Message
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// parsedSecret is the Secret's data as the decisions read it, bounded.
type parsedSecret struct {
	p     *keys.ParsedSecret
	err   error
	chain []*x509.Certificate
	ca    []*x509.Certificate
	// chainErr and caErr say why the rest of tls.crt or ca.crt could not
	// be read.
	chainErr, caErr error
}

// parseSecret parses the Secret's tls.crt, tls.key and ca.crt within the
// bounds the decisions keep (keys.MaxSecretValueBytes and friends); nil
// when there is no Secret.
func parseSecret(g *gathered) *parsedSecret {
	if g.secret == nil {
		return nil
	}
	return parseData(g.secret.Data)
}

func parseData(data map[string][]byte) *parsedSecret {
	out := &parsedSecret{}
	out.p, out.err = keys.ParseSecretData(data)
	if out.p != nil && out.p.Leaf != nil {
		out.chain, out.chainErr = out.p.Chain()
	}
	if out.p != nil {
		if _, ok := data["ca.crt"]; ok {
			out.ca, out.caErr = out.p.CA()
		}
	}
	return out
}

func (p *parsedSecret) leaf() *x509.Certificate {
	if p == nil || p.p == nil {
		return nil
	}
	return p.p.Leaf
}

func secretFields(g *gathered, p *parsedSecret, now time.Time) [][2]string {
	if g.secret == nil {
		if g.crt.Spec.SecretName == "" || certificate.ValidateObjectName(g.crt.Spec.SecretName) != nil {
			return [][2]string{{"", "no secret: spec.secretName is not a valid name"}}
		}
		return [][2]string{{"", "does not exist"}}
	}
	var f [][2]string
	switch {
	case p.err != nil:
		f = append(f, [2]string{"Data", "cannot be read: " + p.err.Error()})
	case p.p.CertErr != nil:
		f = append(f, [2]string{"tls.crt", p.p.CertErr.Error()})
	}
	if leaf := p.leaf(); leaf != nil {
		f = append(f, leafFields(leaf, now)...)
		if keys.IsTemporaryCertificate(leaf) {
			f = append(f, [2]string{"Temporary", "yes: a placeholder written while the first issuance runs, not an issued certificate"})
		}
	}
	if p.p != nil {
		f = append(f, [2]string{"tls.key", keyMatch(p.p)})
	}
	return f
}

// leafFields describes a certificate's public parts.
func leafFields(c *x509.Certificate, now time.Time) [][2]string {
	f := [][2]string{
		{"Subject", subjectOf(c)},
		{"Issued by", c.Issuer.String()},
		{"Serial", serialOf(c)},
		{"Valid", fmt.Sprintf("%s to %s (%s)", c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), span(c.NotAfter.Sub(c.NotBefore)))},
		{"Expires", stamp(c.NotAfter, now)},
	}
	if n := sanText(c); n != "" {
		f = append(f, [2]string{"Names", n})
	}
	f = append(f, [2]string{"Public key", publicKeyText(c)})
	return f
}

func subjectOf(c *x509.Certificate) string {
	if s := c.Subject.String(); s != "" {
		return s
	}
	return "(empty)"
}

// serialOf writes a serial number as openssl does: hex bytes, colon
// separated.
func serialOf(c *x509.Certificate) string {
	if c.SerialNumber == nil {
		return "-"
	}
	b := c.SerialNumber.Bytes()
	if len(b) == 0 {
		return "00"
	}
	hexes := make([]string, len(b))
	for i, x := range b {
		hexes[i] = fmt.Sprintf("%02X", x)
	}
	s := strings.Join(hexes, ":")
	if c.SerialNumber.Sign() < 0 {
		s = "-" + s
	}
	return s
}

func sanText(c *x509.Certificate) string {
	var parts []string
	if len(c.DNSNames) > 0 {
		parts = append(parts, "DNS "+strings.Join(c.DNSNames, ", "))
	}
	if len(c.IPAddresses) > 0 {
		var ips []string
		for _, ip := range c.IPAddresses {
			ips = append(ips, ip.String())
		}
		parts = append(parts, "IP "+strings.Join(ips, ", "))
	}
	if len(c.URIs) > 0 {
		var us []string
		for _, u := range c.URIs {
			us = append(us, u.String())
		}
		parts = append(parts, "URI "+strings.Join(us, ", "))
	}
	if len(c.EmailAddresses) > 0 {
		parts = append(parts, "email "+strings.Join(c.EmailAddresses, ", "))
	}
	return strings.Join(parts, "; ")
}

func keyMatch(p *keys.ParsedSecret) string {
	switch {
	case p.KeyErr != nil:
		return p.KeyErr.Error()
	case p.CertErr != nil:
		return "present; no certificate to match it with (key not shown)"
	case p.KeyMatches:
		return "matches the certificate (key not shown)"
	}
	return "MISMATCH: the private key is not the certificate's (key not shown)"
}

// renewalFields: when the certificate renews and why, from the renewal
// decision the controller's decision made.
func renewalFields(g *gathered, p *parsedSecret, res *certificate.Result, now time.Time, cfg certificate.Config) [][2]string {
	spec := &g.snap.Certificate.Spec
	policy := renewal.PolicyAutomatic
	if spec.Renewal != nil && spec.Renewal.Policy != "" {
		policy = spec.Renewal.Policy
	}
	f := [][2]string{{"Policy", string(policy) + policyNote(policy)}}
	d := res.Renewal
	leaf := p.leaf()
	if d == nil || leaf == nil {
		f = append(f, [2]string{"", "no issued certificate to time renewal from"})
		return f
	}
	if !d.RenewalTime.IsZero() {
		f = append(f, [2]string{"Renewal time", stamp(d.RenewalTime, now)})
	}
	f = append(f, [2]string{"Chosen by", sourceText(d.Source, spec, leaf, g.snap.ARI)})
	due := "no"
	if d.Renew {
		due = "yes"
	}
	f = append(f, [2]string{"Due now", due + " (" + d.Reason + "): " + d.Message})
	if a := g.crt.Status.ACME; a != nil && a.ARI != nil {
		f = append(f, ariFields(a.ARI, now)...)
	}
	if policy == renewal.PolicyScheduled && spec.Renewal != nil {
		var ws []string
		for _, win := range spec.Renewal.Windows {
			days := "every day"
			if len(win.DaysOfWeek) > 0 {
				days = strings.Join(win.DaysOfWeek, ",")
			}
			ws = append(ws, fmt.Sprintf("%s %s-%s %s", days, win.Start, win.End, orDefault(win.TimeZone, "UTC")))
		}
		f = append(f, [2]string{"Windows", strings.Join(ws, "\n")})
		if !d.NextWindowStart.IsZero() {
			f = append(f, [2]string{"Next window", stamp(d.NextWindowStart, now)})
		}
		margin := cfg.Renewal.SafetyMargin
		if margin == 0 {
			margin = renewal.DefaultSafetyMargin(leaf.NotAfter.Sub(leaf.NotBefore))
		}
		failsafe := "a due renewal outside the windows goes ahead from " + stamp(leaf.NotAfter.Add(-margin), now) + ", " + span(margin) + " before expiry"
		if cfg.Renewal.Strict {
			failsafe = "off (strict windows): the certificate may expire outside its windows"
		}
		f = append(f, [2]string{"Fail-safe", failsafe})
	}
	if !d.NextCheck.IsZero() {
		f = append(f, [2]string{"Looks again", stamp(d.NextCheck, now)})
	}
	if rt := g.crt.Status.RenewalTime; rt != nil && !d.RenewalTime.IsZero() && !rt.Time.Equal(d.RenewalTime) {
		f = append(f, [2]string{"status.renewalTime", stamp(rt.Time, now) + ", as the controller last recorded it; the decision now says " + d.RenewalTime.UTC().Format(time.RFC3339)})
	}
	return f
}

func policyNote(p renewal.Policy) string {
	switch p {
	case renewal.PolicyDisabled:
		return " (never renews on its own; `kubectl certlife renew` still does)"
	case renewal.PolicyScheduled:
		return " (renews only inside its windows, but for the fail-safe)"
	}
	return ""
}

// sourceText says which rule chose the renewal time, with the spec's
// values.
func sourceText(s renewal.Source, spec *certificate.Spec, leaf *x509.Certificate, ari *renewal.ARIWindow) string {
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	switch s {
	case renewal.SourceRenewBefore:
		return "spec.renewBefore " + span(spec.RenewBefore.Duration) + " before notAfter"
	case renewal.SourcePercentage:
		return fmt.Sprintf("spec.renewBeforePercentage %d%% of the %s lifetime before notAfter", *spec.RenewBeforePercentage, span(life))
	case renewal.SourceDefault:
		return "the default: when a third of the " + span(life) + " lifetime remains (no renewBefore or renewBeforePercentage)"
	case renewal.SourceShortLived:
		return "the short-lived default: half of the " + span(life) + " lifetime (under 10 days)"
	case renewal.SourceARI:
		if ari != nil {
			return "the CA's suggested window (ACME renewal information, RFC 9773) " + ari.Start.UTC().Format(time.RFC3339) + " to " + ari.End.UTC().Format(time.RFC3339) + ": a point in it fixed by the certificate's UID"
		}
		return "the CA's suggested window (ACME renewal information, RFC 9773)"
	}
	return string(s)
}

func ariFields(a *cmapi.CertificateACMEARIStatus, now time.Time) [][2]string {
	var f [][2]string
	if w := a.SuggestedWindow; w != nil && w.Start != nil && w.End != nil {
		f = append(f, [2]string{"ARI window", w.Start.UTC().Format(time.RFC3339) + " to " + w.End.UTC().Format(time.RFC3339) + " (opens " + relative(w.Start.Time, now) + ")"})
	}
	if a.ExplanationURL != "" {
		f = append(f, [2]string{"ARI explanation", a.ExplanationURL})
	}
	if a.LastChecked != nil {
		f = append(f, [2]string{"ARI checked", stamp(a.LastChecked.Time, now)})
	}
	if a.NextCheck != nil {
		f = append(f, [2]string{"ARI next check", stamp(a.NextCheck.Time, now)})
	}
	if a.LastError != "" {
		f = append(f, [2]string{"ARI last error", a.LastError})
	}
	return f
}

// failureFields: the failed issuances the status records, and the
// backoff they put on the next attempt.
func failureFields(g *gathered, p *parsedSecret, now time.Time, cfg certificate.Config) [][2]string {
	st := &g.snap.Certificate.Status
	if st.LastFailureTime == nil && st.RetryAfter == nil && st.FailedIssuanceAttempts == nil {
		return nil
	}
	var f [][2]string
	if n := st.FailedIssuanceAttempts; n != nil {
		f = append(f, [2]string{"Failed attempts", strconv.Itoa(*n) + " in a row"})
	}
	if t := st.LastFailureTime; t != nil {
		f = append(f, [2]string{"Last failure", stamp(*t, now)})
	}
	if c := st.Condition(certificate.ConditionIssuing); c != nil && c.Status == certificate.StatusFalse {
		f = append(f, [2]string{"Why", c.Reason + ": " + c.Message})
	}
	if t := st.RetryAfter; t != nil {
		f = append(f, [2]string{"CA Retry-After", stamp(*t, now)})
	}
	b := certificate.NextAttempt(g.snap.Certificate, p.leaf(), now, cfg)
	if !b.NextAttempt.IsZero() {
		state := "allowed now"
		if b.Wait {
			state = "held back until then"
		}
		f = append(f, [2]string{"Next attempt", stamp(b.NextAttempt, now) + ", " + state})
	}
	if b.Delay > 0 {
		f = append(f, [2]string{"Backoff", span(b.Delay) + " after the last failure (" + b.Reason + ")"})
	}
	if b.Message != "" {
		f = append(f, [2]string{"", b.Message})
	}
	return f
}

// requestRole says which revision a request is for, beside the
// certificate's.
func requestRole(c *certificate.Certificate, r *cmapi.CertificateRequest) string {
	rev := revisionOf(r)
	cur := 0
	if c.Status.Revision != nil {
		cur = *c.Status.Revision
	}
	switch {
	case rev == 0:
		return "(no revision)"
	case rev == cur:
		return fmt.Sprintf("(revision %d, the current certificate's)", rev)
	case rev == cur+1:
		return fmt.Sprintf("(revision %d, the next)", rev)
	}
	return fmt.Sprintf("(revision %d, an earlier one)", rev)
}

// requestFields: what the issuer did with a request, and for ACME the
// order and challenges behind it.
func requestFields(g *gathered, r *cmapi.CertificateRequest, now time.Time) [][2]string {
	ref := r.Spec.IssuerRef
	f := [][2]string{{"Issuer", fmt.Sprintf("%s %s (%s)", orDefault(ref.Kind, cmapi.IssuerKind), ref.Name, orDefault(ref.Group, "cert-manager.io"))}}
	if t, err := time.Parse(time.RFC3339Nano, r.Annotations[certificate.AnnotationCreatedAt]); err == nil {
		f = append(f, [2]string{"Created", stamp(t, now)})
	}
	state := "waiting for approval"
	conds := slices.Clone(r.Status.Conditions)
	slices.SortStableFunc(conds, func(a, b cmapi.CertificateRequestCondition) int {
		return requestConditionOrder(a.Type) - requestConditionOrder(b.Type)
	})
	for _, c := range conds {
		switch {
		case c.Type == cmapi.CertificateRequestConditionApproved && c.Status == "True":
			state = "approved, waiting for the issuer"
		case c.Type == cmapi.CertificateRequestConditionDenied && c.Status == "True":
			state = "denied"
		case c.Type == cmapi.CertificateRequestConditionInvalidRequest && c.Status == "True":
			state = "invalid"
		case c.Type == cmapi.CertificateRequestConditionReady && c.Status == "True":
			state = "issued"
		case c.Type == cmapi.CertificateRequestConditionReady && c.Reason == cmapi.CertificateRequestReasonFailed:
			state = "failed"
		case c.Type == cmapi.CertificateRequestConditionReady && c.Reason == cmapi.CertificateRequestReasonPending && state != "waiting for approval":
			state = "approved, the issuer is working on it"
		}
	}
	f = append(f, [2]string{"State", state})
	for _, c := range conds {
		s := string(c.Status)
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		if c.LastTransitionTime != nil {
			s += " since " + stamp(c.LastTransitionTime.Time, now)
		}
		if c.Message != "" {
			s += "\n" + c.Message
		}
		f = append(f, [2]string{string(c.Type), s})
	}
	if t := r.Status.FailureTime; t != nil {
		f = append(f, [2]string{"Failed at", stamp(t.Time, now)})
	}
	if len(r.Status.Certificate) > 0 {
		if p := parseData(map[string][]byte{keys.SecretCertificate: r.Status.Certificate}); p.leaf() != nil {
			l := p.leaf()
			f = append(f, [2]string{"Certificate", "serial " + serialOf(l) + ", valid to " + l.NotAfter.UTC().Format(time.RFC3339)})
		} else {
			f = append(f, [2]string{"Certificate", "present but cannot be read"})
		}
	}
	for _, o := range g.orders[r.UID] {
		f = append(f, orderFields(g, &o)...)
	}
	return f
}

func requestConditionOrder(t cmapi.CertificateRequestConditionType) int {
	switch t {
	case cmapi.CertificateRequestConditionApproved:
		return 0
	case cmapi.CertificateRequestConditionDenied:
		return 1
	case cmapi.CertificateRequestConditionInvalidRequest:
		return 2
	case cmapi.CertificateRequestConditionReady:
		return 3
	}
	return 4
}

// orderFields: an Order's state, and each of its Challenges' under it.
func orderFields(g *gathered, o *cmacme.Order) [][2]string {
	s := "Order " + o.Name + ": " + orDefault(string(o.Status.State), "not yet sent to the CA")
	if o.Status.Reason != "" {
		s += "\n  " + o.Status.Reason
	}
	for _, ch := range g.challenges[o.UID] {
		c := "Challenge " + ch.Name + ": " + challengeType(ch.Spec.Type) + " for " + ch.Spec.DNSName
		if ch.Spec.Wildcard {
			c += " (wildcard)"
		}
		c += ", " + orDefault(string(ch.Status.State), "not yet accepted")
		var flags []string
		if ch.Status.Presented {
			flags = append(flags, "presented")
		} else {
			flags = append(flags, "not presented")
		}
		if ch.Status.Processing {
			flags = append(flags, "processing")
		}
		c += " (" + strings.Join(flags, ", ") + ")"
		if ch.Status.Reason != "" {
			c += "\n    " + ch.Status.Reason
		}
		s += "\n  " + c
	}
	return [][2]string{{"ACME", s}}
}

func challengeType(t cmacme.ACMEChallengeType) string {
	switch t {
	case cmacme.ACMEChallengeTypeHTTP01:
		return "HTTP-01"
	case cmacme.ACMEChallengeTypeDNS01:
		return "DNS-01"
	}
	return string(t)
}

func notServedText(g *gathered) string {
	errs := make([]error, len(g.notServed))
	for i, p := range g.notServed {
		errs[i] = p
	}
	return errors.Join(errs...).Error()
}

// decisionFields: what each stage said, the actions, and when the
// controller looks again.
func decisionFields(g *gathered, res *certificate.Result, now time.Time) [][2]string {
	if res.Err != nil {
		return [][2]string{{"", "no decision can be made: " + res.Err.Error()}}
	}
	var f [][2]string
	for _, s := range res.Steps {
		f = append(f, [2]string{string(s.Stage), s.Reason + ": " + orDefault(s.Message, "-")})
	}
	acts := "none: nothing to write"
	if len(res.Actions) > 0 {
		var lines []string
		for i, a := range res.Actions {
			lines = append(lines, fmt.Sprintf("%d. %s", i+1, describeAction(a, g.snap.Certificate)))
		}
		acts = strings.Join(lines, "\n")
	}
	f = append(f, [2]string{"Actions now", acts})
	again := "only when something changes"
	if !res.RequeueAt.IsZero() {
		again = stamp(res.RequeueAt, now)
	}
	if len(res.Actions) > 0 {
		again = "at once, after carrying out the actions"
	}
	f = append(f, [2]string{"Looks again", again})
	return f
}

// describeAction says what an action does, in words; never key material.
func describeAction(a certificate.Action, c *certificate.Certificate) string {
	switch a := a.(type) {
	case certificate.GenerateKey:
		if a.ReuseFrom != "" {
			return "copy the private key of secret " + a.ReuseFrom + " into the next private key secret " + a.SecretName + " (rotation Never)"
		}
		k := string(a.Spec.Algorithm)
		if a.Spec.Size != 0 {
			k += " " + strconv.Itoa(a.Spec.Size)
		}
		return "generate the next private key (" + k + ") into secret " + a.SecretName
	case certificate.DeleteSecret:
		return "delete secret " + a.Name + ": " + a.Reason
	case certificate.CreateRequest:
		return "create CertificateRequest " + a.Request.Name + " for revision " + a.Request.Annotations[certificate.AnnotationRevision] + " with the next private key"
	case certificate.DeleteRequest:
		return "delete CertificateRequest " + a.Name + ": " + a.Reason
	case certificate.WriteSecret:
		if a.KeySecretName == a.Name {
			return "rewrite secret " + a.Name + " from the key and certificate it holds (repair)"
		}
		return "write the issued certificate and the next private key into secret " + a.Name
	case certificate.WriteTemporaryCertificate:
		return "write a temporary certificate into secret " + a.Name + " until the issued one arrives"
	case certificate.UpdateStatus:
		return "update the status: " + statusChange(&c.Status, &a.Status)
	}
	return a.String()
}

// statusChange lists what an UpdateStatus changes.
func statusChange(before, after *certificate.Status) string {
	var parts []string
	for _, c := range after.Conditions {
		old := before.Condition(c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message {
			parts = append(parts, c.Type+"="+c.Status+" ("+c.Reason+")")
		}
	}
	for _, c := range before.Conditions {
		if after.Condition(c.Type) == nil {
			parts = append(parts, c.Type+" removed")
		}
	}
	if !intEq(before.Revision, after.Revision) && after.Revision != nil {
		parts = append(parts, "revision "+strconv.Itoa(*after.Revision))
	}
	if !intEq(before.FailedIssuanceAttempts, after.FailedIssuanceAttempts) {
		n := 0
		if after.FailedIssuanceAttempts != nil {
			n = *after.FailedIssuanceAttempts
		}
		parts = append(parts, "failed attempts "+strconv.Itoa(n))
	}
	if !timeEq(before.RenewalTime, after.RenewalTime) && after.RenewalTime != nil {
		parts = append(parts, "renewal time "+after.RenewalTime.UTC().Format(time.RFC3339))
	}
	if !timeEq(before.NotAfter, after.NotAfter) && after.NotAfter != nil {
		parts = append(parts, "notAfter "+after.NotAfter.UTC().Format(time.RFC3339))
	}
	if before.NextPrivateKeySecretName != after.NextPrivateKeySecretName {
		parts = append(parts, "next private key "+orDefault(after.NextPrivateKeySecretName, "none"))
	}
	if len(parts) == 0 {
		return "times and renewal status"
	}
	return strings.Join(parts, ", ")
}

func intEq(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func timeEq(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}

// nextFields sums up what happens next and when.
func nextFields(g *gathered, res *certificate.Result, now time.Time) [][2]string {
	if res == nil {
		return [][2]string{{"", "Nothing is issued until the spec is changed: the operator does not serve what it asks."}}
	}
	if res.Err != nil {
		return [][2]string{{"", "Nothing: the controller cannot decide on this certificate (" + res.Err.Error() + ")."}}
	}
	var lines []string
	trigger := res.Steps[0]
	switch {
	case trigger.Reason == certificate.ReasonInvalidSpec:
		lines = append(lines, "Nothing is issued until the spec is corrected.")
	case trigger.Reason == certificate.ReasonBackoff:
		lines = append(lines, "An issuance is needed but the backoff holds it back until "+stamp(trigger.RequeueAt, now)+"; `kubectl certlife renew` starts it now.")
	case trigger.Reason == certificate.ReasonSecretInUse || trigger.Reason == certificate.ReasonSecretNotOwned:
		lines = append(lines, "Nothing is written to the secret: "+trigger.Message+".")
	case res.IssuanceReason != "":
		start := "An issuance runs"
		if c := g.snap.Certificate.Status.Condition(certificate.ConditionIssuing); c == nil || c.Status != certificate.StatusTrue {
			start = "An issuance starts now"
		}
		lines = append(lines, start+" ("+res.IssuanceReason+").")
		if m := res.IssuanceMessage; m != "" {
			lines = append(lines, "Issuing: "+m)
		}
	case trigger.Reason == certificate.ReasonUpToDate || trigger.Reason == certificate.ReasonSecretDrifted:
		if d := res.Renewal; d != nil && !d.RenewalTime.IsZero() {
			if d.Reason == renewal.ReasonDisabled {
				expires := ""
				if leaf := parseSecret(g).leaf(); leaf != nil {
					expires = "; it expires at " + stamp(leaf.NotAfter, now)
				}
				lines = append(lines, "Renewal is disabled: nothing renews it on its own"+expires+".")
			} else {
				lines = append(lines, "Up to date. Renews at "+stamp(d.RenewalTime, now)+".")
			}
		} else {
			lines = append(lines, "Up to date.")
		}
	default:
		lines = append(lines, trigger.Reason+": "+trigger.Message)
	}
	if len(res.Actions) > 0 {
		var what []string
		for _, a := range res.Actions {
			what = append(what, describeAction(a, g.snap.Certificate))
		}
		lines = append(lines, "The controller's next pass will "+strings.Join(what, "; then ")+".")
	} else if !res.RequeueAt.IsZero() {
		lines = append(lines, "The controller looks again at "+stamp(res.RequeueAt, now)+", or when something changes.")
	} else {
		lines = append(lines, "The controller looks again when something changes.")
	}
	out := make([][2]string, len(lines))
	for i, l := range lines {
		out[i] = [2]string{"", l}
	}
	return out
}
