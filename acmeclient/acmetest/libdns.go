package acmetest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/libdns/libdns"
)

// The server is a libdns provider of the zones added with AddZone: the
// test's stand-in for a DNS provider's API, writing the records it
// serves.
var (
	_ libdns.RecordAppender = (*DNS)(nil)
	_ libdns.RecordDeleter  = (*DNS)(nil)
	_ libdns.RecordGetter   = (*DNS)(nil)
)

// zone checks that zone was added with AddZone and returns its FQDN.
func (d *DNS) zone(zone string) (string, error) {
	z := fqdn(zone)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.zones[z] {
		return "", fmt.Errorf("acmetest: zone %q is not served by this DNS server (AddZone)", zone)
	}
	return z, nil
}

// owner is the FQDN of a record name relative to zone, checked to lie in
// zone.
func owner(name, zone string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("acmetest: a record in zone %s has no name (the apex is \"@\")", zone)
	}
	n := fqdn(libdns.AbsoluteName(name, zone))
	if n != zone && !strings.HasSuffix(n, "."+zone) {
		return "", fmt.Errorf("acmetest: record name %q is not in zone %s", name, zone)
	}
	return n, nil
}

// AppendRecords adds TXT values and CNAMEs (libdns.RecordAppender): a TXT
// value beside those at its name, a CNAME in place of the one at its
// name. Other types are refused.
func (d *DNS) AppendRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	z, err := d.zone(zone)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, rec := range recs {
		rr := rec.RR()
		name, err := owner(rr.Name, z)
		if err != nil {
			return out, err
		}
		parsed, err := rr.Parse()
		if err != nil {
			return out, fmt.Errorf("acmetest: record %s: %w", rr.Name, err)
		}
		switch r := parsed.(type) {
		case libdns.TXT:
			d.SetTXT(name, r.Text)
			out = append(out, libdns.TXT{Name: r.Name, Text: r.Text})
		case libdns.CNAME:
			d.SetCNAME(name, r.Target)
			out = append(out, libdns.CNAME{Name: r.Name, Target: fqdn(r.Target)})
		default:
			return out, fmt.Errorf("acmetest: record %s: type %s is not served (TXT and CNAME are)", rr.Name, rr.Type)
		}
	}
	return out, nil
}

// DeleteRecords removes TXT values and CNAMEs (libdns.RecordDeleter): a
// TXT record with empty text removes every value at its name; a record
// that is not there is ignored.
func (d *DNS) DeleteRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	z, err := d.zone(zone)
	if err != nil {
		return nil, err
	}
	var out []libdns.Record
	for _, rec := range recs {
		rr := rec.RR()
		name, err := owner(rr.Name, z)
		if err != nil {
			return out, err
		}
		switch rr.Type {
		case "TXT":
			text := rr.Data // a TXT's RR data is its text, unquoted
			for _, v := range d.TXT(name) {
				if text == "" || v == text {
					d.ClearTXT(name, v)
					out = append(out, libdns.TXT{Name: libdns.RelativeName(name, z), Text: v})
				}
			}
		case "CNAME":
			d.mu.Lock()
			target, ok := d.cname[name]
			delete(d.cname, name)
			d.mu.Unlock()
			if ok {
				out = append(out, libdns.CNAME{Name: libdns.RelativeName(name, z), Target: target})
			}
		default:
			return out, fmt.Errorf("acmetest: record %s: type %q is not served (TXT and CNAME are)", rr.Name, rr.Type)
		}
	}
	return out, nil
}

// GetRecords returns the TXT values and CNAMEs in zone
// (libdns.RecordGetter), names relative to it, in name order.
func (d *DNS) GetRecords(_ context.Context, zone string) ([]libdns.Record, error) {
	z, err := d.zone(zone)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	in := func(n string) bool { return d.zoneOf(n) == z }
	var out []libdns.Record
	for n, vals := range d.txt {
		if in(n) {
			for _, v := range vals {
				out = append(out, libdns.TXT{Name: libdns.RelativeName(n, z), Text: v})
			}
		}
	}
	for n, target := range d.cname {
		if in(n) {
			out = append(out, libdns.CNAME{Name: libdns.RelativeName(n, z), Target: target})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RR().Name < out[j].RR().Name })
	return out, nil
}
