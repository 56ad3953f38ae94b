package geoip

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2/mmdbdata"

	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// Record is what a database says of an address: the zero Record when it
// says nothing.
type Record struct {
	// Country is country.iso_code: two upper-case ASCII letters, or "".
	Country string
	// ASN is autonomous_system_number, or 0.
	ASN uint32
}

// Stats are a DB's counters since Open.
type Stats struct {
	Reloads      uint64 // versions of the file loaded after the first
	ReloadErrors uint64 // versions refused: unreadable, invalid, changed while read
	LookupErrors uint64 // records that could not be decoded (answered as the zero Record)
}

// DB is one database file, reloaded by Reload, Poll or Watch. Its
// methods are safe for concurrent use, lookups during reloads included.
type DB struct {
	path string
	cur  atomic.Pointer[loaded]

	mu      sync.Mutex // serialises loads; guards tried and err
	tried   stamp      // the version last tried, loaded or refused
	lastErr error      // why the version last tried was refused; nil if loaded

	reloads, reloadErrors, lookupErrors atomic.Uint64
}

// loaded is one version of the file, open.
type loaded struct {
	r     *maxminddb.Reader
	stamp stamp
}

// stamp identifies a version of the file as stat sees it. The zero
// stamp is a file that could not be stat'ed.
type stamp struct {
	ok    bool
	size  int64
	mtime time.Time
	inode uint64
}

func (s stamp) equal(o stamp) bool {
	return s.ok == o.ok && s.size == o.size && s.mtime.Equal(o.mtime) && s.inode == o.inode
}

func stampOf(fi os.FileInfo) stamp {
	return stamp{ok: true, size: fi.Size(), mtime: fi.ModTime(), inode: inodeOf(fi)}
}

// Open reads the database at path. Its error says why the file is not a
// usable database; there is then no DB.
func Open(path string) (*DB, error) {
	db := &DB{path: path}
	l, st, err := load(path)
	if err != nil {
		return nil, err
	}
	db.tried = st
	db.cur.Store(l)
	return db, nil
}

// OpenBytes opens a database held in memory (no file: Reload and Poll
// fail). data is retained and must not be modified afterwards.
func OpenBytes(data []byte) (*DB, error) {
	r, err := openVerified(data)
	if err != nil {
		return nil, err
	}
	db := &DB{}
	db.cur.Store(&loaded{r: r})
	return db, nil
}

// openVerified opens data as a database and checks it whole.
func openVerified(data []byte) (*maxminddb.Reader, error) {
	r, err := maxminddb.OpenBytes(data)
	if err != nil {
		return nil, err
	}
	if err := r.Verify(); err != nil {
		return nil, err
	}
	return r, nil
}

// MaxDatabaseBytes bounds the database file, read whole (MaxMind's
// GeoLite2 City is about 70 MB, Country and ASN a few): a larger file is
// refused at load and on reload (the database in use keeps serving), and
// a path such as /dev/zero is an error, not a process that reads until
// memory runs out.
const MaxDatabaseBytes = 256 << 20

// load reads, opens and verifies the file at path. The stamp is the
// version read (the zero stamp when it could not be read).
func load(path string) (*loaded, stamp, error) {
	data, fi, err := stableread.ReadFile(path, MaxDatabaseBytes)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("geoip: %w", err)
	}
	st := stampOf(fi)
	r, err := openVerified(data)
	if err != nil {
		return nil, st, fmt.Errorf("geoip: %s: not a valid MaxMind database: %w", path, err)
	}
	return &loaded{r: r, stamp: st}, st, nil
}

// Path is the file the DB reads ("" for OpenBytes).
func (db *DB) Path() string { return db.path }

// Metadata is the loaded database's metadata (type, build time, ...).
func (db *DB) Metadata() maxminddb.Metadata { return db.cur.Load().r.Metadata }

// Reload reads the file now. On an error the database in use is kept,
// the error is counted in Stats.ReloadErrors and is also DB.Err until a
// version loads.
func (db *DB) Reload() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.reloadLocked()
}

func (db *DB) reloadLocked() error {
	if db.path == "" {
		return errors.New("geoip: the database was opened from memory: there is no file to reload")
	}
	l, st, err := load(db.path)
	if errors.Is(err, stableread.ErrChanged) {
		st = stamp{} // not a version: try again at the next poll
	}
	db.tried = st
	db.lastErr = err
	if err != nil {
		db.reloadErrors.Add(1)
		return err
	}
	db.cur.Store(l)
	db.reloads.Add(1)
	return nil
}

// Poll reloads the file when its size, modification time or inode
// differ from the version last tried, and reports whether it did, with
// Reload's error. A file that cannot be stat'ed (being replaced, gone)
// is no change: the database in use keeps serving.
func (db *DB) Poll() (bool, error) {
	fi, err := os.Stat(db.path)
	if err != nil {
		return false, nil
	}
	st := stampOf(fi)
	db.mu.Lock()
	defer db.mu.Unlock()
	if st.equal(db.tried) {
		return false, nil
	}
	return true, db.reloadLocked()
}

// Watch calls Poll every interval until stop is closed. Errors are in
// Stats and DB.Err; onReload, when not nil, is called after each Poll
// that tried a new version, with its error (the caller logs it).
func (db *DB) Watch(interval time.Duration, stop <-chan struct{}, onReload func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if tried, err := db.Poll(); tried && onReload != nil {
			onReload(err)
		}
	}
}

// Err is why the version of the file last tried was refused, or nil
// when it is the one in use.
func (db *DB) Err() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.lastErr
}

// Stats are the DB's counters.
func (db *DB) Stats() Stats {
	return Stats{Reloads: db.reloads.Load(), ReloadErrors: db.reloadErrors.Load(), LookupErrors: db.lookupErrors.Load()}
}

// Lookup is what the database says of addr: its country and ASN, the
// zero Record when it says nothing. It allocates nothing.
func (db *DB) Lookup(addr netip.Addr) Record {
	d, ok := db.decode(addr, false)
	if !ok {
		return Record{}
	}
	return Record{Country: countryString(d.country), ASN: d.asn}
}

// Organization is autonomous_system_organization for addr, or "". It
// allocates the string: not for the hot path.
func (db *DB) Organization(addr netip.Addr) string {
	d, _ := db.decode(addr, true)
	return d.org
}

// scratch holds the records being decoded: Result.Decode takes an
// interface, so the value it fills lives on the heap, and is reused
// rather than made per lookup. The pool holds at most about one per
// concurrent lookup, and the garbage collector empties it.
var scratch = sync.Pool{New: func() any { return new(decoded) }}

// decode looks addr up in the database in use and decodes its record.
// It reports false when there is no record or it could not be decoded
// (counted).
func (db *DB) decode(addr netip.Addr, wantOrg bool) (decoded, bool) {
	if !addr.IsValid() {
		return decoded{}, false
	}
	res := db.cur.Load().r.Lookup(addr.Unmap())
	if !res.Found() {
		if res.Err() != nil {
			db.lookupErrors.Add(1)
		}
		return decoded{}, false
	}
	d := scratch.Get().(*decoded)
	*d = decoded{wantOrg: wantOrg}
	err := res.Decode(d)
	v := *d
	*d = decoded{} // drop the organisation string
	scratch.Put(d)
	if err != nil {
		db.lookupErrors.Add(1)
		return decoded{}, false
	}
	return v, true
}

// decoded is the part of a record Lookup reads.
type decoded struct {
	country [2]byte // 0, 0 for none
	asn     uint32
	wantOrg bool
	org     string
}

// UnmarshalMaxMindDBCursor walks the record's top-level map, reading
// country.iso_code and autonomous_system_number (and, when wanted,
// autonomous_system_organization) and skipping the rest.
func (d *decoded) UnmarshalMaxMindDBCursor(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	m, err := c.Map()
	if err != nil {
		return mmdbdata.Cursor{}, mmdbdata.NormalizeUnmarshalError[decoded](err)
	}
	var next mmdbdata.Cursor
	for {
		key, v, ok := m.Next(next)
		if !ok {
			break
		}
		switch string(key) {
		case "country":
			next, err = d.country2(v)
		case "autonomous_system_number":
			var n uint64
			n, next, err = v.ReadUint()
			if err == nil && n <= 1<<32-1 {
				d.asn = uint32(n)
			}
		case "autonomous_system_organization":
			if d.wantOrg {
				d.org, next, err = v.ReadString()
			} else {
				next, err = v.Skip()
			}
		default:
			next, err = v.Skip()
		}
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
	}
	return m.End()
}

// country2 reads the country map's iso_code in place (no string made).
func (d *decoded) country2(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	m, err := c.Map()
	if err != nil {
		return mmdbdata.Cursor{}, mmdbdata.NormalizeUnmarshalError[decoded](err)
	}
	var next mmdbdata.Cursor
	for {
		key, v, ok := m.Next(next)
		if !ok {
			break
		}
		if string(key) == "iso_code" {
			if k, _ := v.Kind(); k == mmdbdata.KindString {
				// A string value is encoded as a map key is: read its
				// bytes where they lie.
				code, _, err := v.ReadMapKey()
				if err != nil {
					return mmdbdata.Cursor{}, err
				}
				if len(code) == 2 && upper(code[0]) && upper(code[1]) {
					d.country = [2]byte{code[0], code[1]}
				}
			}
		}
		if next, err = v.Skip(); err != nil {
			return mmdbdata.Cursor{}, err
		}
	}
	return m.End()
}

func upper(b byte) bool { return 'A' <= b && b <= 'Z' }

// countries holds "AA" to "ZZ", made once, so that a lookup returns a
// country without making a string.
var countries = func() (t [26 * 26]string) {
	for i := range t {
		t[i] = string([]byte{byte('A' + i/26), byte('A' + i%26)})
	}
	return t
}()

func countryString(c [2]byte) string {
	if c[0] == 0 {
		return ""
	}
	return countries[int(c[0]-'A')*26+int(c[1]-'A')]
}

// Geo answers the rule engine's country and asn (rules.Geo) from a
// country database (GeoLite2/GeoIP2 Country or City) and an ASN database
// (GeoLite2/GeoIP2 ASN, or ISP), either of which may be nil: a nil one
// answers "" or 0, and HasCountry/HasASN (rules.GeoCoverage) say so, so
// that the engine refuses a rule asking what it cannot answer. One file
// holding both (GeoIP2 Enterprise) may be both. Its methods allocate
// nothing.
type Geo struct {
	Countries *DB
	ASNs      *DB
}

// Country is addr's country code, or "".
func (g *Geo) Country(addr netip.Addr) string {
	if g.Countries == nil {
		return ""
	}
	return g.Countries.Lookup(addr).Country
}

// ASN is addr's autonomous system number, or 0.
func (g *Geo) ASN(addr netip.Addr) uint32 {
	if g.ASNs == nil {
		return 0
	}
	return g.ASNs.Lookup(addr).ASN
}

// HasCountry reports whether g has a country database.
func (g *Geo) HasCountry() bool { return g.Countries != nil }

// HasASN reports whether g has an ASN database.
func (g *Geo) HasASN() bool { return g.ASNs != nil }
