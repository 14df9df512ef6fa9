// Package loopback tells addresses that only this machine can reach,
// where schemaq may listen without a token.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a name or an IP, no port) is reachable from
// this machine only: localhost, or a loopback IP. Host names are
// case-insensitive; any other name may resolve beyond this machine.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr reports whether addr (host:port) listens on this machine only:
// ":8080" and "0.0.0.0:8080" listen everywhere.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && Host(host)
}
