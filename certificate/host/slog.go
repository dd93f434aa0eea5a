package host

import (
	"context"
	"errors"
	"log/slog"

	"github.com/certlife/certlife/certificate"
)

// SlogObserver returns a Config.Observe that writes each Event to logger
// as one record (LogEvent): for a host that logs with log/slog and also
// observes events itself, or logs them to a second logger.
func SlogObserver(logger *slog.Logger) func(Event) {
	return func(ev Event) { LogEvent(context.Background(), logger, ev) }
}

// Messages of the records LogEvent writes.
const (
	LogPassFailed     = "certlife: pass failed"
	LogPassWarning    = "certlife: pass went on despite a problem"
	LogIssuanceFailed = "certlife: issuance failed"
	LogBackoff        = "certlife: issuance held back after failures"
	LogAttention      = "certlife: certificate needs attention"
	LogRequestFailed  = "certlife: issuer refused or failed a request"
	LogDecision       = "certlife: certificate decision"
	LogIssuerAnswer   = "certlife: issuer answer"
	LogSweep          = "certlife: issuer sweep"
)

// failureReasons are the certificate reasons of a failed issuance.
var failureReasons = map[string]bool{
	certificate.ReasonDenied: true, certificate.ReasonInvalidRequest: true, certificate.ReasonFailed: true,
	certificate.ReasonIssuedUndecodable: true, certificate.ReasonIssuedWrongKey: true, certificate.ReasonIssuedExpired: true,
	certificate.ReasonIssuedOtherNames: true, certificate.ReasonRequestNotBuildable: true, certificate.ReasonIssuedDueForRenewal: true,
}

// attentionReasons are the certificate reasons that want a person: a
// spec nothing can be issued for, an expired certificate, a request no
// issuer answers.
var attentionReasons = map[string]bool{
	certificate.ReasonInvalidSpec: true, certificate.ReasonInvalidInput: true, certificate.ReasonExpired: true,
	certificate.ReasonIssuerNotAnswering: true,
}

// LogEvent writes ev to logger (nil: slog.Default()) as one record, at a
// level that says whether someone should look:
//
//   - Error: the pass failed (Event.Err), except for a conflict, a store
//     not synced yet or a context's end, which are retried as a matter of
//     course (Debug); a certificate no decision can be made on.
//   - Warn: a problem the pass went on despite (Event.Warning: an ARI
//     read, an issuer that could not reach its CA and is called again at
//     next); an issuance that failed (the certificate's reason is one of
//     the failure reasons, such as Failed or Denied); a spec nothing can
//     be issued for, an expired certificate, a request no issuer answers;
//     an issuer that failed, denied or refused a request.
//   - Info: an issuance held back by the backoff after failures (next is
//     the next attempt); waiting for the store to sync.
//   - Debug: every other decision and issuer answer.
//
// Every record has the attributes kind, namespace, name and at (the
// host clock's time of the pass), and, where they apply, reason,
// message, next (when the object is looked at again; left out when that
// is never or at once), error or warning, issuer and actions (the
// actions' String, which never holds key material). Nothing of a
// secret's data, a request's CSR or an issued certificate is logged.
func LogEvent(ctx context.Context, logger *slog.Logger, ev Event) {
	if logger == nil {
		logger = slog.Default()
	}
	level, msg := classify(ev)
	if !logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("kind", string(ev.Kind)), slog.String("namespace", ev.Namespace), slog.String("name", ev.Name),
		slog.Time("at", ev.Time))
	switch {
	case ev.Result != nil:
		attrs = append(attrs, slog.String("reason", ev.Result.Reason), slog.String("message", ev.Result.Message))
		if ev.Result.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Result.Err.Error()))
		}
		if len(ev.Done) > 0 {
			done := make([]string, len(ev.Done))
			for i, a := range ev.Done {
				done[i] = a.String()
			}
			attrs = append(attrs, slog.Any("actions", done))
		}
	case ev.Request != nil:
		attrs = append(attrs, slog.String("issuer", describeRef(ev.Request.Spec.IssuerRef)))
		if c := ev.Request.Condition(certificate.RequestConditionReady); c != nil {
			attrs = append(attrs, slog.String("reason", c.Reason), slog.String("message", c.Message))
		}
		if !ev.AwaitedSecret.IsZero() {
			attrs = append(attrs, slog.String("awaits", key(ev.AwaitedSecret.Namespace, ev.AwaitedSecret.Name)))
		}
	}
	if !ev.Next.IsZero() && !ev.Next.Equal(ev.Time) {
		attrs = append(attrs, slog.Time("next", ev.Next))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	if ev.Warning != nil {
		attrs = append(attrs, slog.String("warning", ev.Warning.Error()))
	}
	logger.LogAttrs(ctx, level, msg, attrs...)
}

// classify is the level and message of ev's record.
func classify(ev Event) (slog.Level, string) {
	switch {
	case ev.Err != nil && (cancelled(ev.Err) || errors.Is(ev.Err, ErrConflict) || errors.Is(ev.Err, ErrNotSynced)):
		return slog.LevelDebug, LogPassFailed
	case ev.Err != nil:
		return slog.LevelError, LogPassFailed
	case ev.Result != nil && ev.Result.Err != nil:
		return slog.LevelError, LogAttention
	case ev.Warning != nil && errors.Is(ev.Warning, ErrNotSynced):
		return slog.LevelInfo, LogPassWarning
	case ev.Warning != nil:
		return slog.LevelWarn, LogPassWarning
	case ev.Result != nil:
		if failureReasons[ev.Result.Reason] {
			return slog.LevelWarn, LogIssuanceFailed
		}
		if attentionReasons[ev.Result.Reason] {
			return slog.LevelWarn, LogAttention
		}
		if ev.Result.Reason == certificate.ReasonBackoff {
			return slog.LevelInfo, LogBackoff
		}
		for _, s := range ev.Result.Steps {
			if failureReasons[s.Reason] {
				return slog.LevelWarn, LogIssuanceFailed
			}
			if attentionReasons[s.Reason] {
				return slog.LevelWarn, LogAttention
			}
		}
		return slog.LevelDebug, LogDecision
	case ev.Request != nil:
		if certificate.Answered(ev.Request) && ev.Request.Status.FailureTime != nil {
			return slog.LevelWarn, LogRequestFailed
		}
		return slog.LevelDebug, LogIssuerAnswer
	case ev.Kind == KindIssuer:
		return slog.LevelDebug, LogSweep
	}
	return slog.LevelDebug, LogDecision
}
