// Package fielderr is the typed path error of the configuration types that
// live beside their components (store/gossip/gossipconf,
// store/redis/redisconf): each validates its own section and says where
// each problem is by the path of its key ("store.gossip.bind_addr"), and
// package config places the error at that key's file:line, as it places
// rules.FieldError. It also holds the checks of values those sections
// share with config (ValidPort, HostPort, RedactURLError). It imports the
// standard library only.
package fielderr

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Error is one problem with the value at Path. Its message is whole (it
// names the path itself, in the words the component chose).
type Error struct {
	// Path is the key's path from the top of the file
	// ("store.gossip.seeds"), or a prefix of it.
	Path string
	// Msg is the problem, naming its path.
	Msg string
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// List gathers the problems of a validation.
type List struct{ errs []error }

// Add records a problem at path.
func (l *List) Add(path, format string, args ...any) {
	l.errs = append(l.errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Err joins the problems recorded (errors.Join), or nil.
func (l *List) Err() error { return errors.Join(l.errs...) }

// ValidPort reports whether port, from a URL or a host:port, is empty
// (the scheme's default) or a number from 1 to 65535.
func ValidPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// HostPort reports whether s is a bare host:port ("127.0.0.1:3000",
// "localhost:6379"), given where a URL is wanted. Such a value either
// fails to parse as a URL or parses as one whose scheme is the host: either
// way, the message should ask for the scheme. It is never true of a value
// holding credentials, so that quoting it shows no password.
func HostPort(s string) bool {
	if strings.ContainsAny(s, "/@?#") {
		return false
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" {
		return false
	}
	return strings.Trim(port, "0123456789") == ""
}

// RedactURLError is the message of an error of url.Parse without the
// URL, which may hold a password.
func RedactURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}
