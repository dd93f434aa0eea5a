package renewal

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Window is a time of day, on some days of the week, in one time zone,
// during which a Scheduled certificate may renew.
type Window struct {
	// DaysOfWeek the window starts on: "Monday" … "Sunday" (case does not
	// matter; "Mon" … "Sun" also work). Empty means every day.
	DaysOfWeek []string `json:"daysOfWeek,omitempty"`
	// Start is the local start time, "HH:MM" on a 24-hour clock. Required.
	Start string `json:"start"`
	// End is the local end time, "HH:MM" (or "24:00" for midnight at the
	// end of the day). An end earlier than the start rolls over to the next
	// day: "23:00"–"05:00" is a six-hour night window. Required; an end
	// equal to the start is a window that never opens, and is invalid.
	End string `json:"end"`
	// TimeZone is an IANA time zone name such as "Europe/Oslo". Empty means
	// UTC.
	TimeZone string `json:"timezone,omitempty"`
}

// ErrInvalidWindow is wrapped by every error about a window.
var ErrInvalidWindow = errors.New("renewal: invalid window")

// Schedule is a compiled, validated set of windows: compile once and reuse
// it. A Schedule is immutable, so goroutines may share one.
type Schedule struct {
	windows []compiled
}

type compiled struct {
	days       uint8 // bit i set: window starts on time.Weekday(i)
	start, end int   // minutes after local midnight; end may be 1440
	rollover   bool  // end <= start: ends the next day
	loc        *time.Location
}

var dayNames = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// Compile validates windows and compiles them. Every problem is reported,
// each naming its field ("windows[1].start: \"25:00\" is not HH:MM"), and
// wrapping ErrInvalidWindow. No windows is an empty, valid schedule.
func Compile(windows []Window) (*Schedule, error) {
	s := &Schedule{windows: make([]compiled, 0, len(windows))}
	var errs []error
	for i, w := range windows {
		c, werrs := compileWindow(i, w)
		errs = append(errs, werrs...)
		if len(werrs) == 0 {
			s.windows = append(s.windows, c)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func compileWindow(i int, w Window) (compiled, []error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: windows[%d].%s: %s", ErrInvalidWindow, i, field, fmt.Sprintf(format, args...)))
	}
	c := compiled{loc: time.UTC}
	if len(w.DaysOfWeek) == 0 {
		c.days = 0x7f
	}
	for j, d := range w.DaysOfWeek {
		wd, ok := dayNames[strings.ToLower(strings.TrimSpace(d))]
		if !ok {
			bad(fmt.Sprintf("daysOfWeek[%d]", j), "%q is not a day of the week", d)
			continue
		}
		c.days |= 1 << uint(wd)
	}
	var ok bool
	if c.start, ok = parseClock(w.Start, false); !ok {
		bad("start", "%q is not HH:MM on a 24-hour clock", w.Start)
	}
	var endOK bool
	if c.end, endOK = parseClock(w.End, true); !endOK {
		bad("end", "%q is not HH:MM on a 24-hour clock", w.End)
	}
	if ok && endOK {
		switch {
		case c.start == c.end:
			bad("end", "%q equals the start: the window would never open", w.End)
		case c.end < c.start:
			c.rollover = true
		}
	}
	if w.TimeZone != "" {
		loc, err := loadLocation(w.TimeZone)
		if err != nil {
			bad("timezone", "%v", err)
		} else {
			c.loc = loc
		}
	}
	return c, errs
}

// parseClock reads "HH:MM" as minutes after midnight. "24:00" is accepted
// only where allow24 is set.
func parseClock(s string, allow24 bool) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if allow24 && h == 24 && m == 0 {
		return 1440, true
	}
	if h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// Len returns the number of windows.
func (s *Schedule) Len() int {
	if s == nil {
		return 0
	}
	return len(s.windows)
}

// occurrence returns the instants at which window c opens and closes when
// it starts on the local calendar day (y, m, d). ok is false when the
// window does not start on that weekday, or when daylight saving leaves it
// empty that day.
func (c *compiled) occurrence(y int, m time.Month, d int) (start, end time.Time, ok bool) {
	day := time.Date(y, m, d, 12, 0, 0, 0, time.UTC) // noon: weekday without zone trouble
	if c.days&(1<<uint(day.Weekday())) == 0 {
		return start, end, false
	}
	start = wallInstant(y, m, d, c.start, c.loc)
	ed := d
	if c.rollover {
		ed++
	}
	end = wallInstant(y, m, ed, c.end, c.loc)
	return start, end, end.After(start)
}

// wallInstant returns the instant the clocks in loc show minutes after
// midnight on (y, m, d) — defined for daylight saving:
//
//   - a wall time that occurs twice (clocks go back) means its first
//     occurrence, so a window opens as early as it can;
//   - a wall time that does not occur (clocks go forward) means the instant
//     the clocks jump, so a window that should have opened in the skipped
//     hour opens when the hour ends, never a day late.
func wallInstant(y int, m time.Month, d, minutes int, loc *time.Location) time.Time {
	u := time.Date(y, m, d, 0, minutes, 0, 0, time.UTC)
	if loc == time.UTC {
		return u
	}
	_, o1 := u.Add(-24 * time.Hour).In(loc).Zone()
	_, o2 := u.Add(24 * time.Hour).In(loc).Zone()
	a := u.Add(-time.Duration(o1) * time.Second)
	b := u.Add(-time.Duration(o2) * time.Second)
	if b.Before(a) {
		a, b = b, a
	}
	wantY, wantM, wantD := u.Date()
	wantH, wantMin := u.Hour(), u.Minute()
	shows := func(t time.Time) bool {
		lt := t.In(loc)
		ly, lm, ld := lt.Date()
		return ly == wantY && lm == wantM && ld == wantD && lt.Hour() == wantH && lt.Minute() == wantMin
	}
	if shows(a) {
		return a
	}
	if shows(b) {
		return b
	}
	// Skipped: find the first instant after a whose offset is no longer
	// the one before the jump. The jump lies in [a, b] (or near); search
	// minute by minute over at most a few hours, bounded.
	_, before := a.In(loc).Zone()
	lo, hi := a.Add(-3*time.Hour), b.Add(3*time.Hour)
	for i := 0; i < 64 && hi.Sub(lo) > time.Second; i++ {
		mid := lo.Add(hi.Sub(lo) / 2)
		if _, off := mid.In(loc).Zone(); off == before {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi.Truncate(time.Second)
}

// Contains reports whether t is inside a window, and which (its index).
func (s *Schedule) Contains(t time.Time) (int, bool) {
	_, _, i, ok := s.Occurrence(t)
	return i, ok
}

// Occurrence returns the opening of a window that contains t: when it
// opened and closes, and which window (the first in order when several
// contain t). ok is false when t is outside every window.
func (s *Schedule) Occurrence(t time.Time) (start, end time.Time, index int, ok bool) {
	if s == nil {
		return start, end, -1, false
	}
	for i := range s.windows {
		c := &s.windows[i]
		lt := t.In(c.loc)
		y, m, d := lt.Date()
		// A window containing t started today or, rolling over, yesterday;
		// check the day after too, for daylight-saving shifts.
		for _, dd := range [...]int{d - 1, d, d + 1} {
			st, en, okd := c.occurrence(y, m, dd)
			if okd && !t.Before(st) && t.Before(en) {
				return st, en, i, true
			}
		}
	}
	return start, end, -1, false
}

// NextStart returns the earliest instant strictly after now at which a
// window opens, and which window. ok is false for an empty schedule.
func (s *Schedule) NextStart(now time.Time) (at time.Time, index int, ok bool) {
	if s == nil {
		return at, -1, false
	}
	index = -1
	for i := range s.windows {
		c := &s.windows[i]
		lt := now.In(c.loc)
		y, m, d := lt.Date()
		// Every window opens at least once a week; nine days covers any
		// daylight-saving shift.
		for dd := d - 1; dd <= d+8; dd++ {
			start, _, okd := c.occurrence(y, m, dd)
			if !okd || !start.After(now) {
				continue
			}
			if !ok || start.Before(at) {
				at, index, ok = start, i, true
			}
			break
		}
	}
	return at, index, ok
}
