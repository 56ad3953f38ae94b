// Package geoip answers, for a client address, its country (ISO 3166-1
// alpha-2 code) and its autonomous system (number and organisation),
// from a MaxMind-format database file the operator supplies. It is the
// groundwork of the `country` and `asn` key parts and matchers (issue
// 26, item 4); rules and config do not use it yet.
//
// # Databases and fields
//
// Any MaxMind DB (MMDB) file is read with github.com/oschwald/maxminddb-golang/v2.
// Of each record only these fields are decoded, with the names and
// layout MaxMind's databases use:
//
//   - country.iso_code (GeoLite2-Country, GeoIP2-Country, and the City
//     databases, which carry the same map): Record.Country. It is the
//     country where the network is located, not registered_country nor
//     represented_country; a network MaxMind places in no country (some
//     anycast and satellite ranges carry only registered_country) has
//     no country here.
//   - autonomous_system_number (GeoLite2-ASN, GeoIP2-ISP): Record.ASN.
//   - autonomous_system_organization: only by DB.Organization, off the
//     hot path (it allocates the string).
//
// A country code that is not two ASCII letters is no country. An
// address that is in no network of the database, the zero netip.Addr,
// and a record that cannot be decoded all give the zero Record (empty
// country, ASN 0): lookups never fail. Records that could not be decoded
// are counted (Stats.LookupErrors).
//
// An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack
// listener reports for an IPv4 client) is looked up as the IPv4 address,
// also in databases without MaxMind's IPv4 aliases in their IPv6 tree
// and in IPv4-only databases.
//
// # Cost
//
// DB.Lookup allocates nothing: the record is walked with the reader's
// cursor API, the country code read in place and turned into one of 676
// strings made once for the process ("AA" to "ZZ"), the fields not
// needed skipped, into a scratch value reused through a sync.Pool.
// Nothing is cached per address or per record.
//
// # Reload
//
// The file is read whole into memory (maxminddb.OpenBytes; no memory
// map), verified (Reader.Verify: the search tree and data section are
// well formed) and published with an atomic pointer swap. A lookup
// loads the pointer once and uses that database to the end, so a
// reload never changes a lookup half way; the database it replaced is
// released to the garbage collector when the last lookup holding it
// returns. Closing a reader is then a no-op, which is why the memory
// map is not used: a mapped file would have to be unmapped only once
// no lookup uses it, and rewriting the mapped file in place would show
// through to running lookups. The price is the file's size in memory
// (GeoLite2-Country about 10 MB, GeoLite2-ASN about 10 MB), twice for
// the moment of a reload.
//
// DB.Reload reads the file again now. DB.Poll reloads when the file's
// size, modification time or inode differ from the version last tried
// (what DB.Watch calls every interval; the same kind of polling as the
// gateway's configuration watcher, and the file is read with the same
// internal/stableread, so a file that changed while it was read is not
// loaded and is tried again at the next poll). A file that cannot be
// read, is not a valid database, or fails verification leaves the
// database in use serving, is counted (Stats.ReloadErrors) and kept as
// DB.Err; the same bad version is not tried again until the file
// changes. Replace the file by renaming a complete one over it (what
// geoipupdate does): a file written in place may be seen half written,
// and then refused.
//
// # Licence
//
// tollgate ships no database. MaxMind's GeoLite2 databases are free but
// under the GeoLite2 End User License Agreement: each operator creates
// a MaxMind account, accepts it and downloads the files (with
// geoipupdate); GeoIP2 databases are sold by MaxMind. Any other
// provider's database in the MMDB format with the same field names (for
// example DB-IP's or IPinfo's free MMDB files, under their own licences)
// works as well.
package geoip
