//go:build linux

package landlock

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

func hasWarning(e Enforcement, prefix string) bool {
	return slices.ContainsFunc(e.Warnings, func(w string) bool { return strings.HasPrefix(w, prefix) })
}

func TestPlanBlockedNetworkNeedsNamespaceOrABI4(t *testing.T) {
	k := kernel{abi: 3, usernsWhy: "sysctl user.max_user_namespaces is 0"}
	_, err := plan(Policy{Network: NetBlocked}, k)
	if err == nil {
		t.Fatal("plan accepted a blocked network with neither a namespace nor ABI 4")
	}
	for _, want := range []string{"network blocking needs a network namespace or Landlock ABI 4", "kernel has ABI 3", "user.max_user_namespaces is 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// The same kernel can still run an open network, and a blocked one
	// when it has user namespaces.
	if _, err := plan(Policy{}, k); err != nil {
		t.Errorf("open network on ABI 3: %v", err)
	}
	k.userns = true
	e, err := plan(Policy{Network: NetBlocked}, k)
	if err != nil || !e.NetNamespace || e.TCPRules {
		t.Errorf("blocked network on ABI 3 with user namespaces: %+v, %v", e, err)
	}
}

func TestPlanNoLandlock(t *testing.T) {
	want := errors.New("Landlock is not available (kernel 5.10.0 has no Landlock system calls)")
	_, err := plan(Policy{}, kernel{abiErr: want})
	if err != want {
		t.Errorf("plan without Landlock returned %v, want %v", err, want)
	}
	if _, err := plan(Policy{}, kernel{}); err == nil {
		t.Error("plan without Landlock and without a reason succeeded")
	}
}

func TestPlanModes(t *testing.T) {
	const (
		udp      = "UDP (DNS included) is not confined"
		signals  = "processes outside the sandbox that run as the same user can be signalled"
		abstract = "abstract Unix sockets outside the sandbox"
		pathUnix = "Unix sockets outside the sandbox can still be connected to by path"
	)
	blocked := Policy{Network: NetBlocked}
	for _, tc := range []struct {
		name       string
		p          Policy
		k          kernel
		want       Enforcement // Warnings not compared
		warned     []string
		notWarned  []string
		wantErrSub string
	}{
		{
			name: "open ABI 7", p: Policy{}, k: kernel{abi: 7},
			want:      Enforcement{ABI: 7, ScopeSignals: true, ScopeAbstractUnix: true},
			warned:    []string{pathUnix},
			notWarned: []string{udp, signals, abstract},
		},
		{
			name: "blocked ABI 7 netns", p: blocked, k: kernel{abi: 7, userns: true},
			want:      Enforcement{ABI: 7, NetNamespace: true, TCPRules: true, ScopeSignals: true, ScopeAbstractUnix: true},
			notWarned: []string{udp, signals, abstract},
		},
		{
			name: "blocked ABI 7 tcp rules", p: blocked, k: kernel{abi: 7, usernsWhy: "x"},
			want:      Enforcement{ABI: 7, TCPRules: true, ScopeSignals: true, ScopeAbstractUnix: true},
			warned:    []string{udp},
			notWarned: []string{signals, abstract},
		},
		{
			name: "blocked ABI 4 tcp rules", p: blocked, k: kernel{abi: 4, usernsWhy: "x"},
			want:   Enforcement{ABI: 4, TCPRules: true},
			warned: []string{udp, signals, abstract, pathUnix},
		},
		{
			name: "blocked ABI 5 netns covers abstract sockets", p: blocked, k: kernel{abi: 5, userns: true},
			want:      Enforcement{ABI: 5, NetNamespace: true, TCPRules: true},
			warned:    []string{signals},
			notWarned: []string{abstract, udp},
		},
		{
			name: "blocked ABI 10 udp rules", p: blocked, k: kernel{abi: 10, usernsWhy: "x"},
			want:      Enforcement{ABI: 10, TCPRules: true, UDPRules: true, ScopeSignals: true, ScopeAbstractUnix: true},
			notWarned: []string{udp, pathUnix},
		},
		{
			name: "future ABI capped", p: Policy{}, k: kernel{abi: 99},
			want: Enforcement{ABI: maxKnownABI, ScopeSignals: true, ScopeAbstractUnix: true},
		},
		{name: "relative path", p: Policy{ReadOnly: []string{"etc"}}, k: kernel{abi: 7}, wantErrSub: `ReadOnly path "etc" is not absolute`},
		{name: "ports with open network", p: Policy{AllowTCPConnect: []uint16{8080}}, k: kernel{abi: 7}, wantErrSub: "AllowTCPConnect needs Network: NetBlocked"},
		{name: "port 0", p: Policy{Network: NetBlocked, AllowTCPConnect: []uint16{0}}, k: kernel{abi: 7}, wantErrSub: "port 0"},
		{name: "bad mode", p: Policy{Network: 7}, k: kernel{abi: 7}, wantErrSub: "unknown network mode 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := plan(tc.p, tc.k)
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warnings := e.Warnings
			e.Warnings = nil
			if !equalEnforcement(e, tc.want) {
				t.Errorf("got %+v, want %+v", e, tc.want)
			}
			e.Warnings = warnings
			for _, w := range tc.warned {
				if !hasWarning(e, w) {
					t.Errorf("missing warning %q in %q", w, e.Warnings)
				}
			}
			for _, w := range tc.notWarned {
				if hasWarning(e, w) {
					t.Errorf("unexpected warning %q in %q", w, e.Warnings)
				}
			}
		})
	}
}

func equalEnforcement(a, b Enforcement) bool {
	return a.ABI == b.ABI && a.NetNamespace == b.NetNamespace && a.TCPRules == b.TCPRules &&
		a.UDPRules == b.UDPRules && a.ScopeSignals == b.ScopeSignals &&
		a.ScopeAbstractUnix == b.ScopeAbstractUnix && slices.Equal(a.Warnings, b.Warnings) &&
		slices.Equal(a.Skipped, b.Skipped)
}

func TestGrants(t *testing.T) {
	for abi := 1; abi <= maxKnownABI; abi++ {
		fs := handledFS(abi)
		g := grants(fs)
		for i, gr := range g {
			if gr.file&^fsFileRights != 0 {
				t.Errorf("ABI %d list %d: file rights %#x include rights that are not file rights", abi, i, gr.file)
			}
			if gr.dir&^fs != 0 || gr.file&^fs != 0 {
				t.Errorf("ABI %d list %d: grants rights the ruleset does not handle", abi, i)
			}
		}
		rw := g[2]
		if rw.dir&(fsMakeChar|fsMakeBlock) != 0 {
			t.Errorf("ABI %d: ReadWrite lets the child create device nodes", abi)
		}
		if rw.file&fsExecute != 0 || g[1].dir&fsExecute != 0 || g[1].file&fsExecute != 0 {
			t.Errorf("ABI %d: ReadWrite files or ReadOnly paths are executable", abi)
		}
		if abi >= abiRefer && rw.dir&fsRefer == 0 {
			t.Errorf("ABI %d: ReadWrite dirs lack refer", abi)
		}
		if abi >= abiIoctlDev && rw.file&fsIoctlDev == 0 {
			t.Errorf("ABI %d: ReadWrite files lack ioctl_dev (terminals)", abi)
		}
		if abi >= abiTruncate && rw.file&fsTruncate == 0 {
			t.Errorf("ABI %d: ReadWrite files lack truncate", abi)
		}
	}
	if handledFS(1) != 1<<13-1 || handledFS(2) != 1<<14-1 || handledFS(3) != 1<<15-1 ||
		handledFS(4) != 1<<15-1 || handledFS(5) != 1<<16-1 || handledFS(8) != 1<<16-1 || handledFS(9) != 1<<17-1 {
		t.Error("handledFS does not match the Landlock ABI table")
	}
}
