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
