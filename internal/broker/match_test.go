package broker

import (
	"bufio"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPunycode(t *testing.T) {
	for in, want := range map[string]string{
		"bücher.example":  "xn--bcher-kva.example",
		"MÜNCHEN.de":      "xn--mnchen-3ya.de",
		"español.com.":    "xn--espaol-zwa.com",
		"例え.テスト":          "xn--r8jz45g.xn--zckzah",
		"ドメイン名例.jp":       "xn--eckwd4c7cu47r2wf.jp",
		"bücher。example":  "xn--bcher-kva.example",
		"already.ascii":   "already.ascii",
		"Mixed-Case.Org.": "mixed-case.org",
		"ǅemal.ba":        "xn--demal-uib.ba",
		"straße.de":       "xn--strae-oqa.de",
		"ｆｕｌｌ.example":    "full.example",
	} {
		got, err := toASCIIName(in)
		if err != nil || got != want {
			t.Errorf("toASCIIName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "-a.com", "a-.com", "a b.com", "a\x00.com", "ex*mple.com", strings.Repeat("a", 64) + ".com", "a\u200b\n.com"} {
		if got, err := toASCIIName(bad); err == nil {
			t.Errorf("toASCIIName(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseEntryErrors(t *testing.T) {
	for _, bad := range []string{
		"", " a.com", "https://a.com", "a.com/path", "user@a.com", "a.com:0", "a.com:65536", "a.com:x", "a.com:",
		"*", "a*.com", "*.*.com", "*.", "a.*", "[::1", "[::1]x", "[a.com]", "::1:8080:", "fe80::1", "169.254.169.254",
		"[fd00:ec2::254]:80", "metadata.google.internal", "METADATA.google.internal.", "0.0.0.0", "a..com",
	} {
		if bad == "*" {
			continue // a bare "*" is nono's "every name"
		}
		if _, err := parseEntry(bad); err == nil {
			t.Errorf("parseEntry(%q) accepted, want an error", bad)
		}
	}
	_, err := newPolicy([]string{"ok.com", "bad entry"}, nil)
	if err == nil || !strings.Contains(err.Error(), `"bad entry"`) {
		t.Errorf("newPolicy error %v does not name the entry", err)
	}
	if _, err := newPolicy(nil, []string{"169.254.169.254", "metadata.google.internal"}); err != nil {
		t.Errorf("deny entries naming always-refused targets: %v", err)
	}
}

// check runs the name-level policy for host:port.
func check(t *testing.T, p *policy, host string, port int) verdict {
	t.Helper()
	tg, err := parseTarget(host, port)
	if err != nil {
		return verdict{reason: "parse: " + err.Error()}
	}
	return p.check(tg)
}

func TestMatcher(t *testing.T) {
	p, err := newPolicy([]string{
		"api.example.com", "*.wild.org", "jenkins.*.ci.net", "localhost:8080", "127.0.0.1",
		"[::1]:9000", "10.1.2.3:22", "bücher.example", "Trailing.Dot.COM.", "2001:db8::1",
	}, []string{"bad.wild.org", "*.ads.wild.org"})
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		host  string
		port  int
		ok    bool
		exact bool
	}
	for _, c := range []tc{
		{"api.example.com", 443, true, true},
		{"API.Example.COM.", 80, true, true}, // case, trailing dot, any port
		{"example.com", 443, false, false},
		{"x.api.example.com", 443, false, false},
		{"a.wild.org", 443, true, false},
		{"a.b.wild.org", 443, true, false},
		{"wild.org", 443, false, false},       // *.x does not admit x
		{"bad.wild.org", 443, false, false},   // deny before allow
		{"x.ads.wild.org", 443, false, false}, // deny wildcard
		{"jenkins.prod.ci.net", 443, true, false},
		{"jenkins.ci.net", 443, false, false},
		{"jenkins.a.b.ci.net", 443, false, false},
		{"localhost", 8080, true, true},
		{"localhost", 8081, false, false}, // port-scoped
		{"127.0.0.1", 1, true, true},      // IP named without port
		{"127.0.0.2", 80, false, false},
		{"[::1]", 9000, true, true},
		{"::1", 9000, true, true},
		{"[0:0::1]", 9000, true, true}, // same address, other spelling
		{"[::1]", 9001, false, false},
		{"10.1.2.3", 22, true, true},
		{"10.1.2.3", 23, false, false},
		{"xn--bcher-kva.example", 443, true, true}, // IDNA: ASCII form
		{"BÜCHER.example", 443, true, true},        // IDNA: Unicode form
		{"trailing.dot.com", 443, true, true},
		{"[2001:db8::1]", 443, true, true},
		{"[::ffff:127.0.0.1]", 1, true, true}, // mapped address is the IPv4 one
		{"169.254.169.254", 80, false, false},
		{"metadata.google.internal", 80, false, false},
		{"a.wild.org\x00", 443, false, false},
		{"a.wild.org:443", 443, false, false},
	} {
		v := check(t, p, c.host, c.port)
		if v.ok != c.ok || v.ok && v.exact != c.exact {
			t.Errorf("%s port %d: ok=%v exact=%v (%s), want ok=%v exact=%v", c.host, c.port, v.ok, v.exact, v.reason, c.ok, c.exact)
		}
	}
	// Wildcards never admit IP literals; "*" admits every name.
	star, _ := newPolicy([]string{"*"}, nil)
	if v := check(t, star, "1.2.3.4", 80); v.ok {
		t.Error(`"*" admitted an IP literal`)
	}
	if v := check(t, star, "any.thing", 80); !v.ok || v.exact {
		t.Errorf(`"*" on a name: %+v`, v)
	}
	// The port refusal says so.
	if v := check(t, p, "localhost", 22); !strings.Contains(v.reason, "port 22") {
		t.Errorf("port refusal reason %q", v.reason)
	}
}

func TestAddressRules(t *testing.T) {
	for _, c := range []struct {
		addr  string
		exact bool
		ok    bool
	}{
		{"93.184.216.34", false, true},
		{"2606:2800:220:1::1", false, true},
		{"127.0.0.1", false, false}, // rebinding: wildcard or unnamed
		{"127.0.0.1", true, true},
		{"::1", false, false},
		{"::1", true, true},
		{"10.0.0.1", false, false},
		{"172.16.5.5", false, false},
		{"172.32.0.1", false, true},
		{"192.168.1.1", false, false},
		{"100.64.0.1", false, false},
		{"fd12::1", false, false},
		{"fd12::1", true, true},
		{"169.254.169.254", true, false}, // always
		{"169.254.1.1", true, false},
		{"fe80::1", true, false},
		{"fd00:ec2::254", true, false},
		{"100.100.100.200", true, false},
		{"::ffff:169.254.169.254", true, false},
		{"64:ff9b::a9fe:a9fe", true, false}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", false, false},   // NAT64 of 127.0.0.1
		{"0.0.0.0", true, false},
		{"::", true, false},
		{"224.0.0.1", true, false},
	} {
		why := checkAddr(netip.MustParseAddr(c.addr), c.exact)
		if (why == "") != c.ok {
			t.Errorf("checkAddr(%s, exact=%v) = %q, want ok=%v", c.addr, c.exact, why, c.ok)
		}
	}
}

func TestReadRequestTargets(t *testing.T) {
	for _, c := range []struct {
		raw  string
		host string
		port int
		ok   bool
	}{
		{"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n", "api.example.com", 443, true},
		{"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", "::1", 8443, true},
		{"GET http://a.com/x?y HTTP/1.1\r\nHost: a.com\r\n\r\n", "a.com", 80, true},
		{"GET http://a.com:8080/ HTTP/1.1\r\n\r\n", "a.com", 8080, true},
		{"GET http://[::1]/ HTTP/1.1\r\n\r\n", "::1", 80, true},
		{"CONNECT a.com HTTP/1.1\r\n\r\n", "", 0, false},
		{"CONNECT a.com:0 HTTP/1.1\r\n\r\n", "", 0, false},
		{"GET / HTTP/1.1\r\nHost: a.com\r\n\r\n", "", 0, false},
		{"GET https://a.com/ HTTP/1.1\r\n\r\n", "", 0, false},
		{"GET http://u:p@a.com/ HTTP/1.1\r\n\r\n", "", 0, false},
		{"CONNECT a b:1 HTTP/1.1\r\n\r\n", "", 0, false},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "", 0, false},
	} {
		r, err := readRequest(bufio.NewReader(strings.NewReader(c.raw)))
		if err == nil && r.route {
			// Origin form: a credential route's, decided by Proxy.route
			// (which refuses a path no route names).
			err = errors.New("route")
		}
		if (err == nil) != c.ok {
			t.Errorf("%q: err = %v, want ok=%v", c.raw, err, c.ok)
			continue
		}
		if c.ok && (r.target.host != c.host || r.target.port != c.port) {
			t.Errorf("%q: target %q:%d, want %q:%d", c.raw, r.target.host, r.target.port, c.host, c.port)
		}
	}
}

// FuzzParseRequest feeds arbitrary bytes to the request parser and checks
// that an accepted request has a usable, normalised target that the
// policy can judge without panicking.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT api.example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic eA==\r\n\r\n",
		"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nConnection: x\r\n\r\n",
		"CONNECT [::1]:1 HTTP/1.1\r\n\r\n",
		"CONNECT bücher.example:443 HTTP/1.1\r\n\r\n",
		"GET http://[fe80::1%25eth0]:80/ HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	p, err := newPolicy([]string{"*.example.com", "a.com", "[::1]:1", "localhost"}, []string{"x.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := readRequest(bufio.NewReader(strings.NewReader(string(data))))
		if err != nil {
			return
		}
		tg := r.target
		if tg.port < 1 || tg.port > 65535 {
			t.Fatalf("accepted port %d", tg.port)
		}
		if tg.ip.IsValid() == (tg.name != "") {
			t.Fatalf("target is both or neither name and address: %+v", tg)
		}
		if tg.name != "" {
			if err := checkLDH(tg.name); err != nil {
				t.Fatalf("accepted name %q: %v", tg.name, err)
			}
		}
		v := p.check(tg)
		if v.ok && tg.name == "x.example.com" {
			t.Fatal("deny entry bypassed")
		}
		if v.ok && tg.ip.IsValid() && tg.ip != netip.MustParseAddr("::1") {
			t.Fatalf("address %s admitted by a list naming only ::1", tg.ip)
		}
	})
}

// FuzzEntry checks that any entry New accepts can be matched and that a
// name it admits is in its ASCII form.
func FuzzEntry(f *testing.F) {
	for _, s := range []string{"a.com", "*.a.com", "a.*.b.com", "[::1]:80", "1.2.3.4:5", "bücher.example", "*"} {
		f.Add(s, "x.a.com", uint16(80))
	}
	f.Fuzz(func(t *testing.T, raw, host string, port uint16) {
		e, err := parseEntry(raw)
		if err != nil {
			return
		}
		if e.ip.IsValid() && classify(e.ip) == classAlways {
			t.Fatalf("entry %q admits an always-refused address", raw)
		}
		tg, err := parseTarget(host, int(port))
		if err != nil {
			return
		}
		if e.matches(tg.name, tg.ip, tg.port) && e.wildcard && tg.ip.IsValid() {
			t.Fatalf("wildcard %q matched address %s", raw, tg.ip)
		}
	})
}
