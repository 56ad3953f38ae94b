package accesslog

import (
	"fmt"
	"strings"
)

// Fields names the JSON fields (or CSV header columns) that hold each part
// of a request. Each entry lists candidate names, first match wins; the
// zero Fields means DefaultFields.
type Fields struct {
	Time   []string // the request time: RFC 3339, CLF date or Unix epoch, 1677 to 2262
	Addr   []string // the client address, with or without a port
	User   []string // the authenticated user
	Method []string // the HTTP method
	Path   []string // the request target; the query string is split off
	Status []string // the response status
	Key    []string // a ready-made key (the "key" key part)
	Cost   []string // the request's weight, a whole number up to 2^40; default 1
	Host   []string // the request's host
	// Extra are the fields named by field:NAME key parts, in order; at
	// most 8.
	Extra []string
}

// DefaultFields are the names tollgate's own JSON access log (AppendJSON,
// the Field constants), slog's JSON handler and the usual nginx/Caddy
// JSON log recipes use.
var DefaultFields = Fields{
	Time:   []string{FieldTime, "ts", "timestamp", "@timestamp", "time_local", "time_iso8601", "date"},
	Addr:   []string{FieldRemote, "client_ip", "remote_ip", "ip", "remote", "clientip", "client"},
	User:   []string{"user", "remote_user", "auth_user"},
	Method: []string{FieldMethod, "request_method", "verb"},
	Path:   []string{"path", FieldURI, "request_uri", "url", "request_path"},
	Status: []string{FieldStatus, "status_code", "response"},
	Key:    []string{"key"},
	Cost:   []string{"cost", "weight"},
	Host:   []string{FieldHost, "server_name", "http_host", "vhost"},
}

// SetField overrides the names of one part from a "part=name[|name...]"
// flag value, e.g. "addr=client.ip" or "time=ts|@timestamp". Parts: time,
// addr (or ip), user, method, path, status, key, cost, host.
func (f *Fields) SetField(spec string) error {
	part, names, ok := strings.Cut(spec, "=")
	if !ok || names == "" {
		return fmt.Errorf("field %q: want PART=NAME such as addr=client_ip", spec)
	}
	list := strings.Split(names, "|")
	switch strings.ToLower(part) {
	case "time", "timestamp":
		f.Time = list
	case "addr", "ip":
		f.Addr = list
	case "user":
		f.User = list
	case "method":
		f.Method = list
	case "path":
		f.Path = list
	case "status":
		f.Status = list
	case "key":
		f.Key = list
	case "cost":
		f.Cost = list
	case "host":
		f.Host = list
	default:
		return fmt.Errorf("field %q: unknown part %q (want time, addr, user, method, path, status, key, cost or host)", spec, part)
	}
	return nil
}

// WithDefaults fills every empty list from DefaultFields.
func (f Fields) WithDefaults() Fields {
	d := DefaultFields
	pick := func(a, b []string) []string {
		if len(a) > 0 {
			return a
		}
		return b
	}
	return Fields{
		Time: pick(f.Time, d.Time), Addr: pick(f.Addr, d.Addr), User: pick(f.User, d.User),
		Method: pick(f.Method, d.Method), Path: pick(f.Path, d.Path), Status: pick(f.Status, d.Status),
		Key: pick(f.Key, d.Key), Cost: pick(f.Cost, d.Cost), Host: pick(f.Host, d.Host), Extra: f.Extra,
	}
}

// Slots a field name can fill.
const (
	slotNone = iota
	slotTime
	slotAddr
	slotUser
	slotMethod
	slotPath
	slotStatus
	slotKey
	slotCost
	slotHost
	slotExtra // slotExtra+i is Extra[i]
)

// nameTable maps field names to slots with a rank (position in the
// candidate list, lower wins).
type nameTable struct {
	m map[string][]slotRank
}

type slotRank struct{ slot, rank int }

func newNameTable(f Fields) nameTable {
	t := nameTable{m: make(map[string][]slotRank)}
	add := func(slot int, names []string) {
		for rank, n := range names {
			t.m[n] = append(t.m[n], slotRank{slot, rank})
		}
	}
	add(slotTime, f.Time)
	add(slotAddr, f.Addr)
	add(slotUser, f.User)
	add(slotMethod, f.Method)
	add(slotPath, f.Path)
	add(slotStatus, f.Status)
	add(slotKey, f.Key)
	add(slotCost, f.Cost)
	add(slotHost, f.Host)
	for i, n := range f.Extra {
		add(slotExtra+i, []string{n})
	}
	return t
}

// lookup calls fn for every (slot, rank) a name fills; a name can fill
// two slots (an extra field may also be the path).
func (t *nameTable) lookup(name []byte, fn func(slot, rank int)) {
	for _, sr := range t.m[string(name)] {
		fn(sr.slot, sr.rank)
	}
}
