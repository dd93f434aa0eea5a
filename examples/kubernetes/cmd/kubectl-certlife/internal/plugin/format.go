package plugin

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// stamp is t in RFC 3339, UTC, to the second, with how far it is from now:
// "2026-03-01T12:00:00Z (in 3d4h)", "… (2h5m ago)", "… (now)".
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339) + " (" + relative(t, now) + ")"
}

// relative says how far t is from now, in its two largest units.
func relative(t, now time.Time) string {
	d := t.Sub(now).Truncate(time.Second)
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + short(d)
	}
	return short(-d) + " ago"
}

// short writes d in days, hours, minutes and seconds, its two largest
// non-zero units: 3d4h, 4h30m, 5m10s, 42s.
func short(d time.Duration) string {
	units := []struct {
		n   time.Duration
		sym string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var b strings.Builder
	shown := 0
	for _, u := range units {
		if shown == 2 {
			break
		}
		if q := d / u.n; q > 0 {
			fmt.Fprintf(&b, "%d%s", q, u.sym)
			d -= q * u.n
			shown++
		} else if shown > 0 {
			shown++ // a zero between two units ends the precision: 3d, not 3d5m
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// span writes a duration as short does, 0s for none.
func span(d time.Duration) string {
	if d < 0 {
		return "-" + short(-d)
	}
	return short(d)
}

// writer writes indented "Label: value" lines, labels aligned within a
// section, and remembers the first error.
type writer struct {
	w   io.Writer
	err error
}

func (w *writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// section writes a heading and its fields, the labels padded to the
// longest.
func (w *writer) section(title string, fields [][2]string) {
	w.printf("%s\n", title)
	width := 0
	for _, f := range fields {
		width = max(width, len(f[0]))
	}
	for _, f := range fields {
		lines := strings.Split(f[1], "\n")
		if f[0] == "" {
			for _, l := range lines {
				w.printf("  %s\n", l)
			}
			continue
		}
		w.printf("  %-*s  %s\n", width+1, f[0]+":", lines[0])
		for _, l := range lines[1:] {
			w.printf("  %-*s  %s\n", width+1, "", l)
		}
	}
	w.printf("\n")
}
