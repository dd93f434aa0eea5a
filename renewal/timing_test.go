package renewal

import (
	"crypto/x509"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday

func TestRenewalTime(t *testing.T) {
	h := time.Hour
	tests := map[string]struct {
		lifetime    time.Duration
		renewBefore time.Duration
		pct         int32
		timing      Timing
		want        time.Duration // after notBefore
		src         Source
	}{
		"a 3h certificate renews at +2h with the classic default": {3 * h, 0, 0, Timing{TwoThirdsForAll: true}, 2 * h, SourceDefault},
		"a 3h certificate renews at half its life by default":     {3 * h, 0, 0, Timing{}, 90 * time.Minute, SourceShortLived},
		"a 4380h certificate renews at +2920h":                    {4380 * h, 0, 0, Timing{}, 2920 * h, SourceDefault},
		"a 90-day certificate renews with 30 days left":           {90 * 24 * h, 0, 0, Timing{}, 60 * 24 * h, SourceDefault},
		"a 6-day certificate renews after 3 days":                 {144 * h, 0, 0, Timing{}, 72 * h, SourceShortLived},
		"a 10-day certificate is not short-lived":                 {240 * h, 0, 0, Timing{}, 160 * h, SourceDefault},
		"renewBefore 20h on 24h renews at +4h":                    {24 * h, 20 * h, 0, Timing{}, 4 * h, SourceRenewBefore},
		"renewBefore 25h on 24h falls back to the default":        {24 * h, 25 * h, 0, Timing{TwoThirdsForAll: true}, 16 * h, SourceDefault},
		"renewBefore equal to the lifetime falls back":            {24 * h, 24 * h, 0, Timing{TwoThirdsForAll: true}, 16 * h, SourceDefault},
		"30 percent of 730h renews at +511h":                      {730 * h, 0, 30, Timing{}, 511 * h, SourcePercentage},
		"24h3m with renewBefore 24h renews at +3m":                {24*h + 3*time.Minute, 24 * h, 0, Timing{}, 3 * time.Minute, SourceRenewBefore},
		"renewBefore wins over a percentage":                      {100 * h, 10 * h, 50, Timing{}, 90 * h, SourceRenewBefore},
		"a percentage of 100 is ignored":                          {300 * h, 0, 100, Timing{}, 200 * h, SourceDefault},
		"a fractional second is truncated":                        {3*h + 1500*time.Millisecond, 0, 0, Timing{TwoThirdsForAll: true}, 2*h + time.Second, SourceDefault},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, src := Time(t0, t0.Add(tc.lifetime), tc.renewBefore, tc.pct, tc.timing)
			require.True(t, got.Equal(t0.Add(tc.want)), "Time() = +%v (%s), want +%v (%s)", got.Sub(t0), src, tc.want, tc.src)
			require.Equal(t, tc.src, src, "Time() source")
		})
	}
}

func TestRenewalTimeNoOverflowAt99PercentOverTenYears(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.AddDate(10, 0, 0)
	got, _ := Time(nb, na, 0, 99, Timing{})
	want := nb.Add(na.Sub(nb) / 100).Truncate(time.Second)
	require.True(t, got.Equal(want), "99%% of 10 years: %v, want %v", got, want)
	// The largest lifetime a Duration holds, at 1 %: no overflow either.
	far := nb.Add(1<<63 - 1)
	got, _ = Time(nb, far, 0, 1, Timing{})
	require.False(t, got.Before(nb), "1%% of the largest lifetime is before the validity: %v", got)
	require.False(t, got.After(far), "1%% of the largest lifetime is after the validity: %v", got)
}

func TestJitterIsEarlierBoundedAndSpreads(t *testing.T) {
	nb, na := t0, t0.Add(90*24*time.Hour)
	base, _ := Time(nb, na, 0, 0, Timing{})
	timing := Timing{Jitter: true}
	bound := na.Sub(nb) / 20
	perMinute := map[int64]int{}
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("uid-%04d", i)
		a := timing.jitter(base, nb, na, key)
		require.True(t, a == timing.jitter(base, nb, na, key), "jitter is not deterministic")
		require.False(t, a.After(base), "jittered %v is after the base %v", a, base)
		require.Less(t, base.Sub(a), bound, "jittered %v is not within (base-%v, base]", a, bound)
		require.Zero(t, a.Nanosecond(), "jittered %v is not on a whole second", a)
		perMinute[a.Unix()/60]++
	}
	// 2000 certificates expiring in the same second spread uniformly over
	// 6480 minutes: about 1720 distinct minutes, and never a crowd.
	peak := 0
	for _, n := range perMinute {
		peak = max(peak, n)
	}
	require.GreaterOrEqual(t, len(perMinute), 1650, "2000 certificates renew in too few distinct minutes")
	require.LessOrEqual(t, peak, 6, "2000 certificates renew in %d distinct minutes, too many in one", len(perMinute))
	require.True(t, timing.jitter(base, nb, na, "").Equal(base), "no key must mean no jitter")
}

func TestCertID(t *testing.T) {
	// RFC 9773 §4.1's example: AKI 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4,
	// serial 00:87:65:43:21 → "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE".
	aki := []byte{0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3, 0x7B, 0x84, 0x7B, 0xA0, 0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4}
	cert := &x509.Certificate{AuthorityKeyId: aki, SerialNumber: big.NewInt(0x87654321)}
	got, err := CertID(cert)
	require.NoError(t, err, "CertID")
	require.Equal(t, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE", got, "CertID")
	_, err = CertID(&x509.Certificate{SerialNumber: big.NewInt(1)})
	require.Error(t, err, "a certificate without AKI has no ARI identifier")
	_, err = CertID(nil)
	require.Error(t, err, "nil certificate")
}

func TestNextPollClamps(t *testing.T) {
	tests := map[string]struct{ in, want time.Duration }{
		"no Retry-After polls every 6h":   {0, 6 * time.Hour},
		"a 1s Retry-After is raised":      {time.Second, time.Minute},
		"a 3h Retry-After is kept":        {3 * time.Hour, 3 * time.Hour},
		"a 3-day Retry-After is lowered":  {72 * time.Hour, 12 * time.Hour},
		"a negative Retry-After is unset": {-time.Hour, 6 * time.Hour},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, NextPoll(t0, tc.in).Sub(t0), "NextPoll(%v) - t0", tc.in)
		})
	}
}
