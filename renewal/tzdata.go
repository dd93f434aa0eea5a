package renewal

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sync"
	"time"
)

// zoneinfo is the IANA time zone database, release 2025c, as the Go
// distribution packages it (lib/time/zoneinfo.zip; the IANA places the
// database in the public domain). Windows resolve their time zones here and
// only here: never from the machine's /usr/share/zoneinfo or $ZONEINFO, so
// a decision gives the same answer on every machine and reads no file.
//
//go:embed zoneinfo.zip
var zoneinfo []byte

// TimeZoneDatabase is the release of the embedded IANA time zone database
// that windows are resolved against.
const TimeZoneDatabase = "2025c"

var (
	zonesOnce sync.Once
	zonesZip  *zip.Reader
	zonesErr  error
	// zones holds each location resolved so far, by name. The database is
	// embedded and immutable, so a name always resolves to the same rules:
	// the cache never changes what Compile returns.
	zones sync.Map // string → *time.Location
)

// loadLocation resolves an IANA zone name from the embedded database.
// "UTC" and "" are UTC; "Local" is refused (it would depend on the machine).
func loadLocation(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("%q depends on the machine", name)
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	zonesOnce.Do(func() {
		zonesZip, zonesErr = zip.NewReader(bytes.NewReader(zoneinfo), int64(len(zoneinfo)))
	})
	if zonesErr != nil {
		return nil, fmt.Errorf("the embedded time zone database cannot be read: %w", zonesErr)
	}
	f, err := zonesZip.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not in the IANA time zone database %s", name, TimeZoneDatabase)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.IsDir() {
		return nil, fmt.Errorf("%q is not in the IANA time zone database %s", name, TimeZoneDatabase)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	actual, _ := zones.LoadOrStore(name, loc)
	return actual.(*time.Location), nil
}
