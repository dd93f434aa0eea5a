package operator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Metrics are the operator's Prometheus metrics. Register them with
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics
// .Registry) to serve them on the manager's metrics endpoint.
//
// Per certificate (labels namespace, name), from the status each pass
// leaves:
//
//	certlife_certificate_expiration_timestamp_seconds  notAfter
//	certlife_certificate_renewal_timestamp_seconds     when renewal is due
//	certlife_certificate_ready_status{condition}       1 for the Ready condition's status (True, False, Unknown), 0 for the others
//
// Counters, by the certificate's namespace and issuer (issuer_kind,
// issuer_name):
//
//	certlife_certificate_issuances_total               certificates written into their Secret
//	certlife_certificate_issuance_failures_total       failed issuances, by reason
//	certlife_certificate_renewals_deferred_total       renewals a window deferred (RenewalDeferred turned True)
//	certlife_certificate_renewals_forced_total         renewals the fail-safe forced outside the windows (RenewalWindowBypassed turned True)
//	certlife_issuer_answers_total                      requests an issuer answered, by answer (Issued, Failed, Denied, InvalidRequest)
type Metrics struct {
	expiration, renewal, ready                 *prometheus.GaugeVec
	issuances, failures, deferred, forced, ans *prometheus.CounterVec
}

// NewMetrics makes the metrics, unregistered.
func NewMetrics() *Metrics {
	cert := []string{"namespace", "name"}
	issuer := []string{"namespace", "issuer_kind", "issuer_name"}
	return &Metrics{
		expiration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "certlife_certificate_expiration_timestamp_seconds",
			Help: "The date after which the certificate expires, in seconds since the Unix epoch."}, cert),
		renewal: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "certlife_certificate_renewal_timestamp_seconds",
			Help: "The date from which the certificate is due for renewal, in seconds since the Unix epoch."}, cert),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "certlife_certificate_ready_status",
			Help: "The status of the certificate's Ready condition: 1 for the condition label it has."}, append(cert, "condition")),
		issuances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certlife_certificate_issuances_total",
			Help: "Certificates issued and written into their Secret."}, issuer),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certlife_certificate_issuance_failures_total",
			Help: "Failed issuances, by reason."}, append(issuer, "reason")),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certlife_certificate_renewals_deferred_total",
			Help: "Renewals that fell due outside every renewal window and were deferred."}, issuer),
		forced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certlife_certificate_renewals_forced_total",
			Help: "Renewals the fail-safe forced outside the renewal windows as expiry neared."}, issuer),
		ans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certlife_issuer_answers_total",
			Help: "CertificateRequests an issuer answered, by answer."}, append(issuer, "answer")),
	}
}

// Register registers the metrics with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.expiration, m.renewal, m.ready, m.issuances, m.failures, m.deferred, m.forced, m.ans} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var conditionStatuses = []string{certificate.StatusTrue, certificate.StatusFalse, certificate.StatusUnknown}

// observe records the status a pass left on crt (its whole status as now
// stored) and what changed from before.
func (m *Metrics) observe(crt *v1alpha1.Certificate, before, after *v1alpha1.CertificateStatus, issued bool, failure string) {
	if m == nil {
		return
	}
	ns, name := crt.Namespace, crt.Name
	if t := after.NotAfter; t != nil {
		m.expiration.WithLabelValues(ns, name).Set(float64(t.Unix()))
	} else {
		m.expiration.DeleteLabelValues(ns, name)
	}
	if t := after.RenewalTime; t != nil {
		m.renewal.WithLabelValues(ns, name).Set(float64(t.Unix()))
	} else {
		m.renewal.DeleteLabelValues(ns, name)
	}
	ready := certificate.StatusUnknown
	for _, c := range after.Conditions {
		if c.Type == certificate.ConditionReady {
			ready = string(c.Status)
		}
	}
	for _, s := range conditionStatuses {
		v := 0.0
		if s == ready {
			v = 1
		}
		m.ready.WithLabelValues(ns, name, s).Set(v)
	}
	kind := crt.Spec.IssuerRef.Kind
	if kind == "" {
		kind = certificate.DefaultIssuerKind
	}
	iss := []string{ns, kind, crt.Spec.IssuerRef.Name}
	if issued {
		m.issuances.WithLabelValues(iss...).Inc()
	}
	if failure != "" {
		m.failures.WithLabelValues(append(iss, failure)...).Inc()
	}
	if turnedTrue(before, after, renewal.ConditionRenewalDeferred) {
		m.deferred.WithLabelValues(iss...).Inc()
	}
	if turnedTrue(before, after, renewal.ConditionRenewalWindowBypassed) {
		m.forced.WithLabelValues(iss...).Inc()
	}
}

// forget drops a deleted certificate's series.
func (m *Metrics) forget(namespace, name string) {
	if m == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{m.expiration, m.renewal, m.ready} {
		g.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
	}
}

func (m *Metrics) answered(namespace, kind, name, answer string) {
	if m != nil {
		m.ans.WithLabelValues(namespace, kind, name, answer).Inc()
	}
}

func turnedTrue(before, after *v1alpha1.CertificateStatus, t string) bool {
	return conditionTrue(after, t) && !conditionTrue(before, t)
}

func conditionTrue(s *v1alpha1.CertificateStatus, t string) bool {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status == "True"
		}
	}
	return false
}
