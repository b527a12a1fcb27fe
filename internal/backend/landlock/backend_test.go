package landlock

import (
	"errors"
	"slices"
	"strings"
	"testing"

	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// TestPrepareRefusals: what the built-in engine cannot enforce is refused
// by the backend itself: a nono network profile and open_port 0 at
// Prepare (naming the file), a kernel without Landlock and, without a
// view, a listen_port in the plan. An allow list runs through the broker.
func TestPrepareRefusals(t *testing.T) {
	abi := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	s := testSpec()
	s.Network = posture.Network{Mode: posture.NetAllowlist, Profile: "developer"}
	if _, err := (Backend{PolicyFile: "/agents/a/sandbox/nono.json", ABI: abi(ll.ABIScope, nil)}).Prepare(s); err == nil ||
		!strings.Contains(err.Error(), "/agents/a/sandbox/nono.json: network.network_profile \"developer\"") {
		t.Errorf("network_profile: %v", err)
	}

	s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"example.com"}}
	p, err := Backend{ABI: abi(ll.ABIScope, nil)}.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); d.Refusal != "" || !strings.Contains(strings.Join(d.Comments, "\n"), "egress broker on 127.0.0.1:3128") ||
		!slices.Contains(d.Commands[0].Env, "HTTPS_PROXY=http://agent-sandbox:<per-run-token>@127.0.0.1:3128") {
		t.Errorf("allow list: refusal %q comments %q env %q", d.Refusal, d.Comments, d.Commands[0].Env)
	}

	s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"example.com"}, OpenPorts: []int{0}}
	if _, err := (Backend{PolicyFile: "/f/nono.json", ABI: abi(ll.ABIScope, nil)}).Prepare(s); err == nil || !strings.Contains(err.Error(), "/f/nono.json: network.open_port 0") {
		t.Errorf("open_port 0: %v", err)
	}
	s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"http://example.com/"}, Source: "--allow-host"}
	if _, err := (Backend{ABI: abi(ll.ABIScope, nil)}).Prepare(s); err == nil || !strings.Contains(err.Error(), "--allow-host") {
		t.Errorf("a URL in the allow list: %v", err)
	}
	noView := func() (bool, string) { return false, "test: no user namespaces" }
	yes := func() bool { return true }
	s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"example.com"}, ListenPorts: []int{3000}}
	p, err = Backend{ABI: abi(ll.ABIScope, nil), View: noView, Weaker: yes}.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); !strings.Contains(d.Refusal, "listen_port needs") || !strings.Contains(strings.Join(d.Warnings, "\n"), "allow-list network in the WEAKER sandbox") {
		t.Errorf("weaker sandbox with listen_port: refusal %q warnings %q", d.Refusal, d.Warnings)
	}

	// No Landlock: refused without a view (with the weaker sandbox
	// accepted too); with one, the view runs, with one warning, and a
	// write-only grant (which only Landlock keeps unreadable) is refused.
	s.Network = posture.Network{Mode: posture.NetBlocked}
	noLL := abi(0, errors.New("Landlock is not available (test)"))
	for _, weaker := range []func() bool{yes, func() bool { return false }} {
		p, err = Backend{ABI: noLL, View: noView, Weaker: weaker}.Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Describe(); !strings.Contains(d.Refusal, "cannot run here: Landlock is not available") {
			t.Errorf("no-Landlock refusal without a view %q", d.Refusal)
		}
	}
	view := func() (bool, string) { return true, "" }
	rs := s
	rs.Write = nil
	p, err = Backend{ABI: noLL, View: view}.Prepare(rs)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); d.Refusal != "" || len(d.Warnings) != 1 ||
		!strings.Contains(d.Warnings[0], "Landlock is not available (test): the namespace view runs without Landlock") ||
		!strings.Contains(d.Warnings[0], "files outside the grants unreadable and unwritable") {
		t.Errorf("the view without Landlock: refusal %q warnings %q", d.Refusal, d.Warnings)
	}
	ws := s
	ws.Write = []string{"/home/u/log"}
	p, err = Backend{ABI: noLL, View: view, PolicyFile: "/f/nono.json"}.Prepare(ws)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); !strings.Contains(d.Refusal, "/f/nono.json: filesystem.write (write-only) /home/u/log cannot be enforced without Landlock") {
		t.Errorf("a write-only grant without Landlock: refusal %q", d.Refusal)
	}

	p, err = Backend{ABI: abi(ll.MaxKnownABI, nil)}.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Describe()
	if d.Refusal != "" || len(d.Warnings) != 0 {
		t.Errorf("ABI %d: refusal %q warnings %q", ll.MaxKnownABI, d.Refusal, d.Warnings)
	}
	pol, ok := d.JSON["landlock"].(*PrintedPolicy)
	if !ok || pol.Network != "blocked" || len(d.Commands) != 1 || !d.Commands[0].InProcess {
		t.Errorf("description: %+v", d)
	}
}

// TestKernelWarningsFollowTheTable: the warnings switch exactly at the ABI
// table's versions.
func TestKernelWarningsFollowTheTable(t *testing.T) {
	blocked := ll.Policy{Network: ll.NetBlocked}
	if w := KernelWarnings(blocked, ll.ABIResolveUnix-1); len(w) != 1 || !strings.Contains(w[0], "Unix sockets by path") {
		t.Errorf("ABI %d: %q", ll.ABIResolveUnix-1, w)
	}
	if w := KernelWarnings(blocked, ll.ABIResolveUnix); len(w) != 0 {
		t.Errorf("ABI %d: %q", ll.ABIResolveUnix, w)
	}
	if w := KernelWarnings(ll.Policy{}, ll.ABIScope-1); len(w) != 2 {
		t.Errorf("ABI %d, open network: %q", ll.ABIScope-1, w)
	}
	if w := KernelWarnings(ll.Policy{}, ll.ABIScope); len(w) != 0 {
		t.Errorf("ABI %d, open network: %q", ll.ABIScope, w)
	}
}

// TestNetFor: how each network policy is carried out by the engine.
func TestNetFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      posture.Network
		proxy   int
		forward []int
		listen  []int
		err     string
	}{
		{name: "open ignores ports", in: posture.Network{Mode: posture.NetOpen, OpenPorts: []int{1}, ListenPorts: []int{2}}},
		{name: "offline", in: posture.Network{Mode: posture.NetBlocked}},
		{name: "blocked keeps the file's ports", in: posture.Network{Mode: posture.NetBlocked, OpenPorts: []int{11434}, ListenPorts: []int{3000}}, forward: []int{11434}, listen: []int{3000}},
		{name: "allowlist", in: posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.example.com"}}, proxy: 3128},
		{name: "empty allowlist still has the broker", in: posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{}}, proxy: 3128},
		{name: "loopback hosts with a port are forwarded", in: posture.Network{Mode: posture.NetAllowlist,
			AllowDomains: []string{"localhost:8080", "127.0.0.1:9000", "[::1]:9001", "localhost", "api.example.com:443"}, OpenPorts: []int{11434, 8080}},
			proxy: 3128, forward: []int{11434, 8080, 9000, 9001}},
		{name: "the proxy port moves out of the way", in: posture.Network{Mode: posture.NetAllowlist, OpenPorts: []int{3128}, ListenPorts: []int{3129}}, proxy: 3130, forward: []int{3128}, listen: []int{3129}},
		{name: "open_port 0", in: posture.Network{Mode: posture.NetBlocked, OpenPorts: []int{0}}, err: "open_port 0"},
		{name: "listen_port 0", in: posture.Network{Mode: posture.NetBlocked, ListenPorts: []int{0}}, err: "listen_port 0"},
		{name: "a port both ways", in: posture.Network{Mode: posture.NetBlocked, OpenPorts: []int{5}, ListenPorts: []int{5}}, err: "both an open_port"},
		{name: "a bad entry", in: posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"a b"}, Source: "f.json"}, err: "f.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NetFor(tc.in, "f.json")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var listen []int
			for _, p := range n.Listen {
				listen = append(listen, p.Port)
			}
			if n.ProxyPort != tc.proxy || !slices.Equal(n.ForwardPorts(), tc.forward) || !slices.Equal(listen, tc.listen) {
				t.Errorf("got proxy %d forward %v listen %v, want %d %v %v", n.ProxyPort, n.ForwardPorts(), listen, tc.proxy, tc.forward, tc.listen)
			}
		})
	}
}

// TestNetReach: how a connection fares under each network (what why --host
// says; e2e TestWhyHostAgrees checks it against real connections).
func TestNetReach(t *testing.T) {
	allow, err := NetFor(posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.example.com", "localhost:8080", "127.0.0.1"}, OpenPorts: []int{11434}, ListenPorts: []int{3000}}, "f.json")
	if err != nil {
		t.Fatal(err)
	}
	blocked, _ := NetFor(posture.Network{Mode: posture.NetBlocked, OpenPorts: []int{11434}}, "f.json")
	open, _ := NetFor(posture.Network{Mode: posture.NetOpen}, "f.json")
	for _, tc := range []struct {
		net      Net
		weaker   bool
		host     string
		port     int
		allowed  bool
		path     string
		loopback bool
		reason   string
	}{
		{open, false, "127.0.0.1", 5432, true, "host", false, "the network is open"},
		{allow, false, "localhost", 8080, true, "forward", true, "(allow list names localhost:8080)"},
		{allow, false, "::1", 11434, true, "forward", true, "(open_port 11434)"},
		{allow, false, "127.0.0.1", 5432, false, "none", true, "forwarded ports (11434, 8080)"},
		{allow, false, "localhost", 3128, false, "none", true, "is the egress broker"},
		{allow, false, "localhost", 3000, false, "none", true, "the agent's own server (listen_port 3000)"},
		{allow, false, "127.0.0.2", 8080, true, "proxy", true, "port 8080 is forwarded"},
		{allow, false, "api.example.com", 443, true, "proxy", false, `allowed by entry "api.example.com"`},
		{allow, false, "other.example.com", 443, false, "proxy", false, "host not in the allow list"},
		{blocked, false, "localhost", 11434, true, "forward", true, "(open_port 11434)"},
		{blocked, false, "api.example.com", 443, false, "none", false, "the network is blocked"},
		{blocked, false, "127.0.0.2", 11434, false, "none", true, "listens on 127.0.0.1 and ::1 only"},
		// The weaker sandbox: Landlock allows the forwarded ports on every
		// address, and the broker is not on 3128.
		{blocked, true, "203.0.113.7", 11434, true, "port rule", false, "open on every address"},
		{allow, true, "localhost", 3128, false, "none", true, "Landlock lets the agent connect only to the forwarded ports (11434, 8080)"},
		{blocked, true, "api.example.com", 443, false, "none", false, "Landlock refuses TCP connections"},
	} {
		r, err := tc.net.Reach(tc.host, tc.port, tc.weaker)
		if err != nil {
			t.Errorf("%s %s:%d: %v", tc.net.Mode, tc.host, tc.port, err)
			continue
		}
		if r.Allowed != tc.allowed || r.Path != tc.path || r.Loopback != tc.loopback || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s (weaker %v) %s:%d = %+v\nwant allowed %v path %q loopback %v reason ~%q", tc.net.Mode, tc.weaker, tc.host, tc.port, r, tc.allowed, tc.path, tc.loopback, tc.reason)
		}
	}
}
