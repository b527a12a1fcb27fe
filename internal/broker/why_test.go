package broker

import (
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	allow := []string{"api.example.com", "*.cdn.example.com", "local.test:8080", "10.0.0.5"}
	cases := []struct {
		host   string
		port   int
		ok     bool
		reason string
	}{
		{"api.example.com", 443, true, `allowed by entry "api.example.com"`},
		{"API.Example.com.", 443, true, `allowed by entry "api.example.com"`},
		{"x.cdn.example.com", 443, true, `allowed by entry "*.cdn.example.com"`},
		{"cdn.example.com", 443, false, "host not in the allow list"},
		{"local.test", 8080, true, `allowed by entry "local.test:8080"`},
		{"local.test", 443, false, `port 443 not allowed (entry "local.test:8080" names another port)`},
		{"10.0.0.5", 22, true, `allowed by entry "10.0.0.5"`},
		{"10.0.0.6", 22, false, "IP address not in the allow list"},
		{"169.254.169.254", 80, false, "always refused"},
		{"metadata.google.internal", 80, false, "cloud metadata name, always refused"},
	}
	for _, c := range cases {
		ok, reason, err := Allowed(allow, c.host, c.port)
		if err != nil || ok != c.ok || !strings.Contains(reason, c.reason) {
			t.Errorf("Allowed(%s:%d) = %v, %q, %v; want %v, %q", c.host, c.port, ok, reason, err, c.ok, c.reason)
		}
	}
	if _, _, err := Allowed([]string{"a*b.com"}, "x.com", 443); err == nil {
		t.Error("a malformed list was accepted")
	}
	if _, _, err := Allowed(allow, "x.com", 0); err == nil {
		t.Error("port 0 was accepted")
	}
}

func TestAllowedInSandbox(t *testing.T) {
	allow := []string{"127.0.0.1", "localhost:8080", "api.example.com"}
	for _, c := range []struct {
		host   string
		port   int
		ok     bool
		reason string
	}{
		{"127.0.0.1", 5432, false, "port 5432 of the loopback is not forwarded"},
		{"localhost", 5432, false, "not forwarded"},
		{"127.0.0.2", 5432, false, "not forwarded"},
		{"::1", 5432, false, "not forwarded"},
		{"[::1]", 8080, true, "port 8080 is forwarded"},
		{"localhost", 8080, true, "forwarded"},
		{"a.localhost", 8080, true, "forwarded"},
		{"127.0.0.9", 11434, true, "port 11434 is forwarded"},
		{"api.example.com", 443, true, `allowed by entry "api.example.com"`},
		{"other.example.com", 8080, false, "host not in the allow list"},
	} {
		ok, reason, err := AllowedInSandbox(allow, []int{8080, 11434}, c.host, c.port)
		if err != nil || ok != c.ok || !strings.Contains(reason, c.reason) {
			t.Errorf("AllowedInSandbox(%s:%d) = %v, %q, %v; want %v, %q", c.host, c.port, ok, reason, err, c.ok, c.reason)
		}
	}
	for h, want := range map[string]bool{"localhost": true, "LocalHost.": true, "a.localhost": true, "127.0.0.1": true, "::1": true, "[::1]": true, "127.0.0.2": false, "localhost.example": false, "10.0.0.1": false} {
		if Direct(h) != want {
			t.Errorf("Direct(%q) = %v, want %v", h, !want, want)
		}
	}
	for h, want := range map[string]bool{"localhost": true, "127.0.0.2": true, "[::1]": true, "::ffff:127.0.0.1": true, "vm": false, "10.0.0.1": false} {
		if Loopback(h) != want {
			t.Errorf("Loopback(%q) = %v, want %v", h, !want, want)
		}
	}
}
