package landlock

import (
	"errors"
	"strings"
	"testing"

	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// TestPrepareRefusals: what the built-in engine cannot enforce is refused
// by the backend itself: a nono network profile at Prepare (naming the
// file), an allow-list network and a kernel without Landlock in the plan.
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
	if d := p.Describe(); !strings.Contains(d.Refusal, "egress broker") {
		t.Errorf("allow-list refusal %q", d.Refusal)
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
