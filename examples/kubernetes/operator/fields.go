package operator

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"
)

// NotServed lists, as field errors, what a Certificate asks that this
// operator does not serve yet: the fields of cert-manager.io/v1 that
// certlife has no counterpart for, and renewal windows certlife cannot
// express. Such a certificate is not issued: its Ready condition says
// InvalidSpec and names each field, as for any invalid spec — a field is
// never silently ignored. Nil when everything is served.
func NotServed(c *cmapi.Certificate) []*certificate.FieldError {
	var out []*certificate.FieldError
	add := func(path, format string, args ...any) {
		out = append(out, &certificate.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	const notYet = "is not served by this operator yet"
	s := &c.Spec
	if s.SignatureAlgorithm != "" {
		add("spec.signatureAlgorithm", "%s: the signature algorithm follows the key", notYet)
	}
	if k := s.Keystores; k != nil && k.PKCS12 != nil && k.PKCS12.Create && k.PKCS12.Profile == cmapi.Modern2026PKCS12Profile {
		add("spec.keystores.pkcs12.profile", "%q %s: use Modern2023, LegacyDES or LegacyRC2", k.PKCS12.Profile, notYet)
	}
	if _, err := fallbackIssuers(c.Annotations[AnnotationFallbackIssuers]); err != nil {
		add("metadata.annotations["+AnnotationFallbackIssuers+"]", "%v", err)
	}
	if r := s.Renewal; r != nil {
		for i, w := range r.Windows {
			if _, problem := windowToCore(w, i); problem != nil {
				out = append(out, problem)
			}
		}
	}
	return out
}

// cronDays are the day names a cron expression may use, by number
// (0 and 7 are Sunday).
var cronDays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// windowToCore converts a cert-manager renewal window — a cron
// expression with a duration and a time zone — into certlife's: a start
// time of day on some days of the week, an end, a time zone. certlife
// expresses "M H * * DAYS" (a minute and an hour; any day of the month and
// any month; days of the week as *, 0–7 or SUN–SAT, in lists and ranges;
// also @daily, @midnight, @weekly) with a duration under a day in whole
// minutes; anything else is a problem naming the field.
func windowToCore(w cmapi.CertificateRenewalWindows, i int) (renewal.Window, *certificate.FieldError) {
	path := fmt.Sprintf("spec.renewal.windows[%d]", i)
	bad := func(field, format string, args ...any) (renewal.Window, *certificate.FieldError) {
		return renewal.Window{}, &certificate.FieldError{Path: path + "." + field, Message: fmt.Sprintf(format, args...)}
	}
	cron := strings.TrimSpace(w.Cron)
	switch strings.ToLower(cron) {
	case "@daily", "@midnight":
		cron = "0 0 * * *"
	case "@weekly":
		cron = "0 0 * * 0"
	}
	served := `this operator serves "M H * * DAYS": a minute and an hour, any day of the month and month, days of the week as *, 0–7 or SUN–SAT, in lists and ranges`
	f := strings.Fields(cron)
	if len(f) != 5 {
		return bad("cron", "%q is not a cron expression of five fields: %s", w.Cron, served)
	}
	minute, err1 := strconv.Atoi(f[0])
	hour, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || minute < 0 || minute > 59 || hour < 0 || hour > 23 || (f[2] != "*" && f[2] != "?") || f[3] != "*" {
		return bad("cron", "%q is not served: %s", w.Cron, served)
	}
	days, ok := cronWeekdays(f[4])
	if !ok {
		return bad("cron", "%q is not served: %s", w.Cron, served)
	}
	if w.WindowDuration == nil {
		return bad("windowDuration", "is required")
	}
	d := w.WindowDuration.Duration
	if d <= 0 || d >= 24*time.Hour || d%time.Minute != 0 {
		return bad("windowDuration", "%v is not served: a window lasts whole minutes, less than a day", d)
	}
	start := time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute
	end := start + d
	endClock := hhmm(end % (24 * time.Hour))
	if end == 24*time.Hour {
		endClock = "24:00"
	}
	return renewal.Window{DaysOfWeek: days, Start: hhmm(start), End: endClock, TimeZone: w.Timezone}, nil
}

// cronWeekdays reads a cron day-of-week field; nil days for every day.
func cronWeekdays(field string) (days []string, ok bool) {
	if field == "*" || field == "?" {
		return nil, true
	}
	var set [7]bool
	for _, part := range strings.Split(field, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, okA := cronDay(from)
		b := a
		okB := true
		if isRange {
			b, okB = cronDay(to)
			if b == 0 && strings.TrimSpace(to) == "7" {
				b = 7
			}
		}
		if !okA || !okB || a > b {
			return nil, false
		}
		for d := a; d <= b; d++ {
			set[d%7] = true
		}
	}
	for d, on := range set {
		if on {
			days = append(days, time.Weekday(d).String())
		}
	}
	return days, true
}

func cronDay(s string) (int, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if d, ok := cronDays[s]; ok {
		return d, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 7 {
		return 0, false
	}
	return n % 7, true
}

func hhmm(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
