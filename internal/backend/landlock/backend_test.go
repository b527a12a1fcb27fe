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

	s.Network = posture.Network{Mode: posture.NetBlocked}
	p, err = Backend{ABI: abi(0, errors.New("Landlock is not available"))}.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Describe(); !strings.Contains(d.Refusal, "cannot run here: Landlock is not available") {
		t.Errorf("no-Landlock refusal %q", d.Refusal)
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
