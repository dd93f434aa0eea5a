package operator

import (
	"context"
	"sync/atomic"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"
)

// Metrics are the operator's Prometheus metrics. Register them with
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics
// .Registry) to serve them on the manager's metrics endpoint.
//
// Per certificate (labels namespace, name), read from the status in the
// operator's cache when Prometheus scrapes — nothing is held per
// certificate between scrapes, and a deleted certificate's series go with
// it:
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
//
// And per ACME issuer (namespace, issuer_kind, issuer_name), by kind of
// request (newOrder, authorization, challenge, finalize, order,
// certificate, nonce, account, directory, …), counted by each issuer's
// acmeclient.Transport:
//
//	certlife_acme_requests_total                       requests sent to the ACME server
type Metrics struct {
	issuances, failures, deferred, forced, ans *prometheus.CounterVec
	perCertificate                             *certificateCollector
	acmeRequests                               *acmeRequestsCollector
}

// NewMetrics makes the metrics, unregistered; the per-certificate ones
// read the cache of the manager Setup is given.
func NewMetrics() *Metrics {
	issuer := []string{"namespace", "issuer_kind", "issuer_name"}
	return &Metrics{
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
		perCertificate: newCertificateCollector(),
		acmeRequests: &acmeRequestsCollector{desc: prometheus.NewDesc("certlife_acme_requests_total",
			"Requests sent to ACME servers, by issuer and kind of request.", append(issuer, "kind"), nil)},
	}
}

// Register registers the metrics with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.perCertificate, m.acmeRequests, m.issuances, m.failures, m.deferred, m.forced, m.ans} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var conditionStatuses = []string{certificate.StatusTrue, certificate.StatusFalse, certificate.StatusUnknown}

// certificateCollector makes the per-certificate series from the cache
// at each scrape.
type certificateCollector struct {
	reader                     atomic.Pointer[client.Reader]
	expiration, renewal, ready *prometheus.Desc
}

func newCertificateCollector() *certificateCollector {
	cert := []string{"namespace", "name"}
	return &certificateCollector{
		expiration: prometheus.NewDesc("certlife_certificate_expiration_timestamp_seconds",
			"The date after which the certificate expires, in seconds since the Unix epoch.", cert, nil),
		renewal: prometheus.NewDesc("certlife_certificate_renewal_timestamp_seconds",
			"The date from which the certificate is due for renewal, in seconds since the Unix epoch.", cert, nil),
		ready: prometheus.NewDesc("certlife_certificate_ready_status",
			"The status of the certificate's Ready condition: 1 for the condition label it has.", append(cert, "condition"), nil),
	}
}

// Describe sends the descriptions of the per-certificate series.
func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.expiration
	ch <- c.renewal
	ch <- c.ready
}

// Collect sends each cached certificate's series.
func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	var list cmapi.CertificateList
	if err := (*r).List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range list.Items {
		crt := &list.Items[i]
		ns, name := crt.Namespace, crt.Name
		if t := crt.Status.NotAfter; t != nil {
			ch <- prometheus.MustNewConstMetric(c.expiration, prometheus.GaugeValue, float64(t.Unix()), ns, name)
		}
		if t := crt.Status.RenewalTime; t != nil {
			ch <- prometheus.MustNewConstMetric(c.renewal, prometheus.GaugeValue, float64(t.Unix()), ns, name)
		}
		ready := certificate.StatusUnknown
		for _, cond := range crt.Status.Conditions {
			if cond.Type == cmapi.CertificateConditionReady {
				ready = string(cond.Status)
			}
		}
		for _, s := range conditionStatuses {
			v := 0.0
			if s == ready {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, v, ns, name, s)
		}
	}
}

// observe counts what changed in crt's status during a pass.
func (m *Metrics) observe(crt *cmapi.Certificate, before, after *certificate.Status, issued bool, failure string) {
	if m == nil {
		return
	}
	kind := crt.Spec.IssuerRef.Kind
	if kind == "" {
		kind = cmapi.IssuerKind
	}
	iss := []string{crt.Namespace, kind, crt.Spec.IssuerRef.Name}
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

func (m *Metrics) answered(namespace, kind, name, answer string) {
	if m != nil {
		m.ans.WithLabelValues(namespace, kind, name, answer).Inc()
	}
}

func turnedTrue(before, after *certificate.Status, t string) bool {
	return conditionTrue(after, t) && !conditionTrue(before, t)
}

func conditionTrue(s *certificate.Status, t string) bool {
	c := s.Condition(t)
	return c != nil && c.Status == certificate.StatusTrue
}
