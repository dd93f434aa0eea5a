package renewal

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustCompile(t testing.TB, ws ...Window) *Schedule {
	t.Helper()
	s, err := Compile(ws)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCompileRejectsInvalidWindowsNamingTheField(t *testing.T) {
	tests := map[string]struct {
		windows []Window
		want    []string // every field error expected
	}{
		"an hour of 25":             {[]Window{{Start: "25:00", End: "05:00"}}, []string{`windows[0].start: "25:00" is not HH:MM`}},
		"a single-digit hour":       {[]Window{{Start: "7:00", End: "09:00"}}, []string{`windows[0].start: "7:00"`}},
		"minutes of 60":             {[]Window{{Start: "07:00", End: "09:60"}}, []string{`windows[0].end: "09:60"`}},
		"24:00 as a start":          {[]Window{{Start: "24:00", End: "09:00"}}, []string{`windows[0].start: "24:00"`}},
		"an unknown day":            {[]Window{{DaysOfWeek: []string{"Monday", "Funday"}, Start: "01:00", End: "02:00"}}, []string{`windows[0].daysOfWeek[1]: "Funday" is not a day`}},
		"an unknown time zone":      {[]Window{{Start: "01:00", End: "02:00", TimeZone: "Mars/Olympus"}}, []string{`windows[0].timezone: "Mars/Olympus"`}},
		"a window that never opens": {[]Window{{Start: "03:00", End: "03:00"}}, []string{`windows[0].end: "03:00" equals the start`}},
		"every problem is reported": {
			[]Window{{Start: "01:00", End: "02:00"}, {Start: "x", End: "y", TimeZone: "Nowhere"}},
			[]string{`windows[1].start`, `windows[1].end`, `windows[1].timezone`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(tc.windows)
			if !errors.Is(err, ErrInvalidWindow) {
				t.Fatalf("Compile() = %v, want ErrInvalidWindow", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, err := Compile([]Window{{Start: "00:00", End: "24:00", DaysOfWeek: []string{"sat", "SUNDAY"}}}); err != nil {
		t.Fatalf("a whole-day weekend window: %v", err)
	}
}

func TestContains(t *testing.T) {
	weekdaysNight := Window{DaysOfWeek: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}, Start: "23:00", End: "05:00"}
	weekend := Window{DaysOfWeek: []string{"Saturday", "Sunday"}, Start: "00:00", End: "23:59"}
	office := Window{Start: "09:00", End: "17:00"}
	oslo := Window{Start: "09:00", End: "10:00", TimeZone: "Europe/Oslo"}
	tests := map[string]struct {
		windows []Window
		at      string
		want    int // -1: outside
	}{
		"inside a daily window":                              {[]Window{office}, "2026-01-05T12:00:00Z", 0},
		"the start is inside":                                {[]Window{office}, "2026-01-05T09:00:00Z", 0},
		"the end is outside":                                 {[]Window{office}, "2026-01-05T17:00:00Z", -1},
		"before a daily window":                              {[]Window{office}, "2026-01-05T08:59:59Z", -1},
		"a rollover window holds the next morning":           {[]Window{weekdaysNight}, "2026-01-06T03:00:00Z", 0},
		"a rollover window started Friday holds Saturday 4h": {[]Window{weekdaysNight}, "2026-01-10T04:00:00Z", 0},
		"a rollover window not started Sunday is closed on Monday morning": {
			[]Window{weekdaysNight}, "2026-01-05T03:00:00Z", -1,
		},
		"several windows are ORed":            {[]Window{weekdaysNight, weekend}, "2026-01-10T12:00:00Z", 1},
		"outside every window":                {[]Window{weekdaysNight, weekend}, "2026-01-07T12:00:00Z", -1},
		"a time zone shifts the window (CET)": {[]Window{oslo}, "2026-01-05T08:30:00Z", 0},
		"a time zone shifts the window (UTC 09:30 is 10:30 in Oslo)": {
			[]Window{oslo}, "2026-01-05T09:30:00Z", -1,
		},
		"summer time shifts it again (CEST)": {[]Window{oslo}, "2026-07-06T07:30:00Z", 0},
		"a whole day window holds 23:59:59":  {[]Window{{Start: "00:00", End: "24:00"}}, "2026-01-05T23:59:59Z", 0},
	}
	for _, day := range []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"} {
		tests["the day "+day+" is understood"] = struct {
			windows []Window
			at      string
			want    int
		}{[]Window{{DaysOfWeek: []string{day}, Start: "12:00", End: "13:00"}}, dayOf(day) + "T12:30:00Z", 0}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i, ok := mustCompile(t, tc.windows...).Contains(utc(tc.at))
			if (tc.want >= 0) != ok || (ok && i != tc.want) {
				t.Fatalf("Contains(%s) = %d %v, want %d", tc.at, i, ok, tc.want)
			}
		})
	}
}

// dayOf returns the date of the given weekday in the week of 2026-01-04.
func dayOf(name string) string {
	for d := 4; d < 11; d++ {
		t := time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC)
		if t.Weekday().String() == name {
			return t.Format("2006-01-02")
		}
	}
	panic(name)
}

func TestNextStart(t *testing.T) {
	weekdaysNight := Window{DaysOfWeek: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}, Start: "23:00", End: "05:00"}
	weekend := Window{DaysOfWeek: []string{"Saturday"}, Start: "10:00", End: "12:00", TimeZone: "America/New_York"}
	tests := map[string]struct {
		windows []Window
		now     string
		want    string
		index   int
	}{
		"later today":                  {[]Window{weekdaysNight}, "2026-01-05T12:00:00Z", "2026-01-05T23:00:00Z", 0},
		"strictly after now":           {[]Window{weekdaysNight}, "2026-01-05T23:00:00Z", "2026-01-06T23:00:00Z", 0},
		"Friday night to Monday night": {[]Window{weekdaysNight}, "2026-01-09T23:30:00Z", "2026-01-12T23:00:00Z", 0},
		"the earliest of several":      {[]Window{weekdaysNight, weekend}, "2026-01-09T23:30:00Z", "2026-01-10T15:00:00Z", 1},
		"a weekly window a week away":  {[]Window{weekend}, "2026-01-10T15:00:01Z", "2026-01-17T15:00:00Z", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, i, ok := mustCompile(t, tc.windows...).NextStart(utc(tc.now))
			if !ok || !got.Equal(utc(tc.want)) || i != tc.index {
				t.Fatalf("NextStart(%s) = %v %d %v, want %s %d", tc.now, got, i, ok, tc.want, tc.index)
			}
		})
	}
	if _, _, ok := mustCompile(t).NextStart(t0); ok {
		t.Fatal("an empty schedule has a next start")
	}
}

// TestDaylightSaving pins the documented behaviour in Europe/Oslo and
// America/New_York for a start in a skipped hour and in a repeated hour.
func TestDaylightSaving(t *testing.T) {
	tests := map[string]struct {
		w         Window
		now       string
		wantStart string
	}{
		"Oslo spring forward: a 02:30 start opens when clocks jump to 03:00 CEST": {
			Window{Start: "02:30", End: "04:00", TimeZone: "Europe/Oslo"}, "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z",
		},
		"Oslo fall back: a 02:30 start opens at its first occurrence (CEST)": {
			Window{Start: "02:30", End: "04:00", TimeZone: "Europe/Oslo"}, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z",
		},
		"New York spring forward: a 02:15 start opens at 03:00 EDT": {
			Window{Start: "02:15", End: "05:00", TimeZone: "America/New_York"}, "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z",
		},
		"New York fall back: a 01:30 start opens at its first occurrence (EDT)": {
			Window{Start: "01:30", End: "03:00", TimeZone: "America/New_York"}, "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z",
		},
		"the day after a jump is normal again": {
			Window{Start: "02:30", End: "04:00", TimeZone: "Europe/Oslo"}, "2026-03-29T02:00:00Z", "2026-03-30T00:30:00Z",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := mustCompile(t, tc.w)
			got, _, ok := s.NextStart(utc(tc.now))
			if !ok || !got.Equal(utc(tc.wantStart)) {
				t.Fatalf("NextStart = %v, want %s", got, tc.wantStart)
			}
			if _, in := s.Contains(got); !in {
				t.Fatal("the start is not inside its window")
			}
			if _, in := s.Contains(got.Add(-time.Second)); in {
				t.Fatal("the window is open before its start")
			}
		})
	}
	// A window that lies wholly inside the skipped hour does not open that
	// day, and opens the next.
	s := mustCompile(t, Window{Start: "02:10", End: "02:50", TimeZone: "Europe/Oslo"})
	got, _, _ := s.NextStart(utc("2026-03-28T12:00:00Z"))
	if want := utc("2026-03-30T00:10:00Z"); !got.Equal(want) {
		t.Fatalf("a window inside the skipped hour opens at %v, want %v", got, want)
	}
}

func FuzzWindows(f *testing.F) {
	f.Add("Monday", "23:00", "05:00", "Europe/Oslo", "", "09:00", "17:00", "America/New_York", int64(0), int64(3600))
	f.Add("", "02:30", "03:30", "Europe/Oslo", "Sat", "00:00", "24:00", "", int64(1774746000), int64(0))
	f.Add("Funday", "25:00", "x", "Nowhere", "", "", "", "", int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, d1, s1, e1, z1, d2, s2, e2, z2 string, nowUnix, lifeSec int64) {
		// Keep times within years where zone data is meaningful.
		nowUnix = 1_000_000_000 + (nowUnix%1_500_000_000+1_500_000_000)%1_500_000_000
		now := time.Unix(nowUnix, 0).UTC()
		var ws []Window
		for _, w := range []Window{{Start: s1, End: e1, TimeZone: z1}, {Start: s2, End: e2, TimeZone: z2}} {
			if w.Start == "" && w.End == "" {
				continue
			}
			ws = append(ws, w)
		}
		if d1 != "" && len(ws) > 0 {
			ws[0].DaysOfWeek = []string{d1}
		}
		if d2 != "" && len(ws) > 1 {
			ws[1].DaysOfWeek = []string{d2}
		}
		s, err := Compile(ws)
		if err == nil {
			if next, i, ok := s.NextStart(now); ok {
				if !next.After(now) {
					t.Fatalf("next start %v is not after now %v", next, now)
				}
				if j, in := s.Contains(next); !in {
					t.Fatalf("next start %v (windows[%d]) is not inside a window (%d)", next, i, j)
				}
			} else if s.Len() > 0 {
				t.Fatal("a valid, non-empty schedule has no next start")
			}
		}
		// The decision: renew now exactly when inside a window or the
		// fail-safe applies.
		life := time.Duration(lifeSec%(400*24*3600)) * time.Second
		if life < 0 {
			life = -life
		}
		in := Input{NotBefore: now.Add(-life), NotAfter: now.Add(time.Duration(lifeSec%(30*24*3600)) * time.Second),
			Spec: Spec{Policy: PolicyScheduled, Windows: ws}, JitterKey: s1}
		for _, strict := range []bool{false, true} {
			dec := Decide(in, now, Options{Strict: strict})
			if dec.Renew && !dec.Bypassed && err == nil && len(ws) > 0 {
				if _, inside := s.Contains(now); !inside {
					t.Fatalf("renews outside every window without the fail-safe: %+v", dec)
				}
			}
			if dec.Bypassed && strict {
				t.Fatal("strict mode bypassed the windows")
			}
			if !dec.Renew && !dec.NextCheck.IsZero() && !dec.NextCheck.After(now) && dec.Reason != ReasonConfigInvalid {
				t.Fatalf("not renewing, yet the next check %v is not after now %v: %s", dec.NextCheck, now, dec.Message)
			}
			if again := Decide(in, now, Options{Strict: strict}); again.Message != dec.Message || !again.NextCheck.Equal(dec.NextCheck) || again.Renew != dec.Renew {
				t.Fatal("the same input gave two decisions")
			}
		}
	})
}

// Time zones resolve from the database embedded in the package, so every
// machine gives the same answer: every zone it holds resolves, "Local" (the
// machine's own zone) and directory names are refused, and a name resolves
// to the same rules each time.
func TestTimeZonesComeFromTheEmbeddedDatabase(t *testing.T) {
	zr, err := zip.NewReader(bytes.NewReader(zoneinfo), int64(len(zoneinfo)))
	require.NoError(t, err)
	require.Greater(t, len(zr.File), 500, "the embedded database holds the IANA zones")
	for _, f := range zr.File {
		loc, err := loadLocation(f.Name)
		require.NoError(t, err, f.Name)
		again, err := loadLocation(f.Name)
		require.NoError(t, err)
		assert.Same(t, loc, again, "%s resolves to one location", f.Name)
		assert.Equal(t, f.Name, loc.String())
	}
	for name, want := range map[string]string{
		"Local":        `"Local" depends on the machine`,
		"Europe":       `"Europe" is not in the IANA time zone database 2025c`,
		"Mars/Olympus": `"Mars/Olympus" is not in the IANA time zone database`,
		"../etc/hosts": `is not in the IANA time zone database`,
	} {
		_, err := Compile([]Window{{Start: "01:00", End: "02:00", TimeZone: name}})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "windows[0].timezone: ")
		assert.Contains(t, err.Error(), want, name)
	}
	// Oslo's rules, from the embedded data: CET in winter, CEST in summer.
	oslo, err := loadLocation("Europe/Oslo")
	require.NoError(t, err)
	_, winter := time.Date(2026, 1, 15, 12, 0, 0, 0, oslo).Zone()
	_, summer := time.Date(2026, 7, 15, 12, 0, 0, 0, oslo).Zone()
	assert.Equal(t, 3600, winter)
	assert.Equal(t, 7200, summer)
}
