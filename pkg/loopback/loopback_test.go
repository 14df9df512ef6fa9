package loopback_test

import (
	"testing"

	"github.com/schemaq/schemaq/pkg/loopback"
)

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.8.9.10:8080", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{"LocalHost:8080", true},
		{":8080", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"10.0.0.1:8080", false},
		{"localhost.example.com:8080", false},
		{"127.0.0.1", false}, // no port: not an address to listen on
		{"", false},
	} {
		if got := loopback.Addr(tc.addr); got != tc.want {
			t.Errorf("Addr(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "0.0.0.0": false, "": false, "nats": false} {
		if got := loopback.Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
