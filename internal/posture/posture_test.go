package posture

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
)

func file(t *testing.T, k sandboxfile.Kind, src string) *sandboxfile.File {
	t.Helper()
	f, err := sandboxfile.Parse("/agents/a/"+k.RelPath(), k, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestResolve covers every rule of the seed's backend precedence, network
// precedence and opting-out lists, and their combinations.
func TestResolve(t *testing.T) {
	linux := Host{GOOS: "linux", NonoFound: true}
	noNono := Host{GOOS: "linux"}
	mac := Host{GOOS: "darwin"}
	nono := `{}`
	nonoAllow := `{"network": {"allow_domain": ["api.example.com"], "open_port": [11434]}}`
	nonoBlock := `{"network": {"block": true}}`
	nonoProfile := `{"network": {"network_profile": "developer"}}`
	sbxAllow := `{"network": {"allow_domain": ["sbx.example.com"]}}`
	optOut := `{"sandbox": false}`

	type want struct {
		sandboxed bool
		backend   Backend
		reason    Reason
		net       NetMode
		domains   []string
		ports     []int
		policy    sandboxfile.Kind // "" when no policy file
		fallback  bool
		warnings  []string // substrings, one per warning, in order
		err       string
	}
	tests := []struct {
		name  string
		flags Flags
		nono  string // "" = absent
		sbx   string
		host  Host
		want  want
	}{
		// --no-sandbox: off, unconditionally.
		{"no-sandbox beats a folder opt-in", Flags{NoSandbox: true}, nono, "", linux,
			want{reason: ByNoSandboxFlag, warnings: []string{"--no-sandbox: a runs unsandboxed"}}},
		{"no-sandbox beats --sandbox-backend", Flags{NoSandbox: true, Backend: Sbx}, nono, sbxAllow, linux,
			want{reason: ByNoSandboxFlag, warnings: []string{"--no-sandbox overrides", "--no-sandbox: a runs"}}},
		{"no-sandbox with --offline warns the seed's words", Flags{NoSandbox: true, Offline: true}, "", "", linux,
			want{reason: ByNoSandboxFlag, warnings: []string{"network policy has no effect without the sandbox — a runs with no network isolation (--sandbox to enforce it)", "--no-sandbox: a runs"}}},
		{"no-sandbox with --allow-host warns the seed's words", Flags{NoSandbox: true, AllowHosts: []string{"x.com"}}, nono, "", linux,
			want{reason: ByNoSandboxFlag, warnings: []string{"network policy has no effect without the sandbox", "--no-sandbox: a runs"}}},

		// --sandbox-backend forces that backend on.
		{"sandbox-backend sbx over a nono folder", Flags{Backend: Sbx}, nonoAllow, "", linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxBackendFlag, net: NetAllowlist, domains: []string{"api.example.com"}, ports: []int{11434}, policy: sandboxfile.Nono}},
		{"sandbox-backend nono over an sbx folder", Flags{Backend: Nono}, "", sbxAllow, linux,
			want{sandboxed: true, backend: Nono, reason: BySandboxBackendFlag, net: NetAllowlist, domains: []string{"sbx.example.com"}, policy: sandboxfile.Sbx}},
		{"sandbox-backend sbx uses sbx.json when both", Flags{Backend: Sbx}, nonoAllow, sbxAllow, linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxBackendFlag, net: NetAllowlist, domains: []string{"sbx.example.com"}, policy: sandboxfile.Sbx}},
		{"sandbox-backend overrides a nono.json opt-out", Flags{Backend: Nono}, optOut, "", linux,
			want{sandboxed: true, backend: Nono, reason: BySandboxBackendFlag, net: NetOpen, policy: sandboxfile.Nono}},
		{"sandbox-backend overrides an sbx.json opt-out", Flags{Backend: Sbx}, "", optOut, linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxBackendFlag, net: NetOpen, policy: sandboxfile.Sbx}},
		{"sandbox-backend on a folder with no files", Flags{Backend: Landlock}, "", "", linux,
			want{sandboxed: true, backend: Landlock, reason: BySandboxBackendFlag, net: NetOpen}},
		{"explicit nono without nono is an error", Flags{Backend: Nono}, nono, "", noNono,
			want{err: "--sandbox-backend nono: nono is not installed"}},
		{"explicit landlock off Linux is an error", Flags{Backend: Landlock}, nono, "", mac,
			want{err: "the landlock backend needs Linux"}},
		{"unknown backend name", Flags{Backend: "docker"}, nono, "", linux,
			want{err: `--sandbox-backend "docker"`}},

		// Bare --sandbox: the folder's declared backend, default nono.
		{"--sandbox with no files defaults to nono", Flags{Sandbox: true}, "", "", linux,
			want{sandboxed: true, backend: Nono, reason: BySandboxFlag, net: NetOpen}},
		{"--sandbox with only sbx.json uses sbx", Flags{Sandbox: true}, "", sbxAllow, linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxFlag, net: NetAllowlist, domains: []string{"sbx.example.com"}, policy: sandboxfile.Sbx}},
		{"--sandbox with both uses nono", Flags{Sandbox: true}, nonoBlock, sbxAllow, linux,
			want{sandboxed: true, backend: Nono, reason: BySandboxFlag, net: NetBlocked, policy: sandboxfile.Nono}},
		{"--sandbox overrides a nono.json opt-out", Flags{Sandbox: true}, optOut, "", linux,
			want{sandboxed: true, backend: Nono, reason: BySandboxFlag, net: NetOpen, policy: sandboxfile.Nono}},
		{"--sandbox overrides an sbx.json opt-out, keeping sbx", Flags{Sandbox: true}, "", optOut, linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxFlag, net: NetOpen, policy: sandboxfile.Sbx}},

		// The folder's own posture.
		{"nono.json alone", Flags{}, nonoAllow, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, domains: []string{"api.example.com"}, ports: []int{11434}, policy: sandboxfile.Nono}},
		{"sbx.json alone", Flags{}, "", sbxAllow, linux,
			want{sandboxed: true, backend: Sbx, reason: ByFolderSbx, net: NetAllowlist, domains: []string{"sbx.example.com"}, policy: sandboxfile.Sbx}},
		{"both files: nono wins and names the override", Flags{}, nono, sbxAllow, linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderBoth, net: NetOpen, policy: sandboxfile.Nono, warnings: []string{"using nono (pass --sandbox-backend sbx to use sbx)"}}},
		{"nono.json opt-out runs bare and names the file", Flags{}, optOut, "", linux,
			want{reason: ByFolderOptOut, warnings: []string{"SANDBOX DISABLED: /agents/a/sandbox/nono.json says {\"sandbox\": false}"}}},
		{"sbx.json opt-out runs bare and names the file", Flags{}, "", optOut, linux,
			want{reason: ByFolderOptOut, warnings: []string{"SANDBOX DISABLED: /agents/a/sandbox/sbx.json"}}},
		{"an opt-out in either file wins over the other's opt-in", Flags{}, nonoAllow, optOut, linux,
			want{reason: ByFolderOptOut, warnings: []string{"sandbox/sbx.json says"}}},
		{"both files opting out name both", Flags{}, optOut, optOut, linux,
			want{reason: ByFolderOptOut, warnings: []string{"nono.json says", "sbx.json says"}}},

		// Restrictive network flags force the sandbox on.
		{"--offline with no files forces nono", Flags{Offline: true}, "", "", linux,
			want{sandboxed: true, backend: Nono, reason: ByNetworkFlags, net: NetBlocked}},
		{"--allow-host with no files forces nono", Flags{AllowHosts: []string{"a.com", "a.com", "b.com"}}, "", "", linux,
			want{sandboxed: true, backend: Nono, reason: ByNetworkFlags, net: NetAllowlist, domains: []string{"a.com", "b.com"}}},
		{"network flags act as --sandbox over an opt-out", Flags{Offline: true}, optOut, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByNetworkFlags, net: NetBlocked, policy: sandboxfile.Nono}},
		{"network flags keep an sbx-only folder on sbx over an opt-out", Flags{AllowHosts: []string{"a.com"}}, "", optOut, linux,
			want{sandboxed: true, backend: Sbx, reason: ByNetworkFlags, net: NetAllowlist, domains: []string{"a.com"}, policy: sandboxfile.Sbx}},
		{"network flags do not change a folder's backend", Flags{Offline: true}, "", sbxAllow, linux,
			want{sandboxed: true, backend: Sbx, reason: ByFolderSbx, net: NetBlocked, policy: sandboxfile.Sbx}},

		// Unsandboxed default.
		{"no files and no flags run bare with a warning", Flags{}, "", "", linux,
			want{reason: ByDefault, warnings: []string{"declares neither sandbox/nono.json nor sandbox/sbx.json"}}},

		// Network precedence: --offline > --allow-host > file > open.
		{"--offline beats --allow-host and the file", Flags{Offline: true, AllowHosts: []string{"a.com"}}, nonoAllow, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetBlocked, policy: sandboxfile.Nono}},
		{"--allow-host replaces the file's list, keeps its ports", Flags{AllowHosts: []string{"a.com"}}, nonoAllow, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, domains: []string{"a.com"}, ports: []int{11434}, policy: sandboxfile.Nono}},
		{"--allow-host overrides a file's block", Flags{AllowHosts: []string{"a.com"}}, nonoBlock, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, domains: []string{"a.com"}, policy: sandboxfile.Nono}},
		{"file block", Flags{}, nonoBlock, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetBlocked, policy: sandboxfile.Nono}},
		{"file block keeps the file's ports", Flags{}, `{"network": {"block": true, "open_port": [11434]}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetBlocked, ports: []int{11434}, policy: sandboxfile.Nono}},
		{"--offline blocks the file's ports too", Flags{Offline: true}, `{"network": {"block": true, "open_port": [11434]}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetBlocked, policy: sandboxfile.Nono}},
		{"file network_profile is an allow list", Flags{}, nonoProfile, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, policy: sandboxfile.Nono}},
		// Issue 15 item 2: a present, empty allow list is allow-list mode
		// with no host, never open; the warning says so.
		{"file empty allow_domain: allowlist with no host", Flags{}, `{"network": {"allow_domain": []}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, policy: sandboxfile.Nono,
				warnings: []string{"/agents/a/sandbox/nono.json: network.allow_domain: the allow list is empty, so no host is reachable"}}},
		{"file empty allow_domain keeps its ports", Flags{}, `{"network": {"allow_domain": [], "open_port": [11434]}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, ports: []int{11434}, policy: sandboxfile.Nono,
				warnings: []string{"no host is reachable"}}},
		{"sbx.json empty allow_domain", Flags{}, "", `{"network": {"allow_domain": []}}`, linux,
			want{sandboxed: true, backend: Sbx, reason: ByFolderSbx, net: NetAllowlist, policy: sandboxfile.Sbx,
				warnings: []string{"/agents/a/sandbox/sbx.json: network.allow_domain: the allow list is empty"}}},
		{"empty allow_domain under landlock", Flags{}, `{"network": {"allow_domain": []}}`, "", noNono,
			want{sandboxed: true, backend: Landlock, reason: ByFolderNono, net: NetAllowlist, policy: sandboxfile.Nono, fallback: true,
				warnings: []string{"no host is reachable"}}},
		{"--allow-host replaces an empty list", Flags{AllowHosts: []string{"a.com"}}, `{"network": {"allow_domain": []}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetAllowlist, domains: []string{"a.com"}, policy: sandboxfile.Nono}},
		{"--offline over an empty list", Flags{Offline: true}, `{"network": {"allow_domain": []}}`, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetBlocked, policy: sandboxfile.Nono}},
		{"empty list forced to sbx from nono.json", Flags{Backend: Sbx}, `{"network": {"allow_domain": []}}`, "", linux,
			want{sandboxed: true, backend: Sbx, reason: BySandboxBackendFlag, net: NetAllowlist, policy: sandboxfile.Nono,
				warnings: []string{"no host is reachable"}}},
		{"--network open overrides the file's allow list, loudly", Flags{NetworkOpen: true}, nonoAllow, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetOpen, policy: sandboxfile.Nono, warnings: []string{"NETWORK OPEN: --network open gives a an unrestricted network"}}},
		{"--network open overrides a file's block and profile", Flags{NetworkOpen: true}, nonoProfile, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetOpen, policy: sandboxfile.Nono, warnings: []string{"NETWORK OPEN"}}},
		{"--network open forces the sandbox on like the other network flags", Flags{NetworkOpen: true}, "", "", linux,
			want{sandboxed: true, backend: Nono, reason: ByNetworkFlags, net: NetOpen, warnings: []string{"NETWORK OPEN"}}},
		{"--network open over an opt-out still sandboxes", Flags{NetworkOpen: true}, optOut, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByNetworkFlags, net: NetOpen, policy: sandboxfile.Nono, warnings: []string{"NETWORK OPEN"}}},
		{"--network open with --offline is an error", Flags{NetworkOpen: true, Offline: true}, nono, "", linux,
			want{err: "--network open contradicts --offline and --allow-host"}},
		{"--network open with --allow-host is an error", Flags{NetworkOpen: true, AllowHosts: []string{"a.com"}}, nono, "", linux,
			want{err: "--network open contradicts"}},
		{"--network open with --no-sandbox warns the seed's words", Flags{NetworkOpen: true, NoSandbox: true}, "", "", linux,
			want{reason: ByNoSandboxFlag, warnings: []string{"network policy has no effect without the sandbox", "--no-sandbox: a runs"}}},
		{"no network keys: open", Flags{}, nono, "", linux,
			want{sandboxed: true, backend: Nono, reason: ByFolderNono, net: NetOpen, policy: sandboxfile.Nono}},

		// nono missing: the built-in landlock engine on Linux.
		{"nono missing falls back to landlock", Flags{}, nonoAllow, "", noNono,
			want{sandboxed: true, backend: Landlock, reason: ByFolderNono, net: NetAllowlist, domains: []string{"api.example.com"}, ports: []int{11434}, policy: sandboxfile.Nono, fallback: true}},
		{"network flags without nono fall back to landlock", Flags{Offline: true}, "", "", noNono,
			want{sandboxed: true, backend: Landlock, reason: ByNetworkFlags, net: NetBlocked, fallback: true}},
		{"nono missing off Linux is an error", Flags{}, nono, "", mac,
			want{err: "nono is not installed"}},
		{"sbx is never replaced by landlock", Flags{}, "", sbxAllow, noNono,
			want{sandboxed: true, backend: Sbx, reason: ByFolderSbx, net: NetAllowlist, domains: []string{"sbx.example.com"}, policy: sandboxfile.Sbx}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Agent: "a", Flags: tt.flags, Host: tt.host}
			if tt.nono != "" {
				in.Nono = file(t, sandboxfile.Nono, tt.nono)
			}
			if tt.sbx != "" {
				in.Sbx = file(t, sandboxfile.Sbx, tt.sbx)
			}
			got, err := Resolve(in)
			if tt.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := tt.want
			if got.Sandboxed != w.sandboxed || got.Backend != w.backend || got.Reason != w.reason {
				t.Errorf("got sandboxed=%v backend=%q reason=%q, want %v %q %q", got.Sandboxed, got.Backend, got.Reason, w.sandboxed, w.backend, w.reason)
			}
			if (got.Fallback != "") != w.fallback {
				t.Errorf("fallback = %q, want set=%v", got.Fallback, w.fallback)
			}
			if w.sandboxed {
				if got.Network.Mode != w.net {
					t.Errorf("network mode = %q, want %q", got.Network.Mode, w.net)
				}
				domains := w.domains
				if domains == nil {
					domains = []string{}
				}
				if !reflect.DeepEqual(got.Network.AllowDomains, domains) {
					t.Errorf("domains = %q, want %q", got.Network.AllowDomains, domains)
				}
				ports := w.ports
				if ports == nil {
					ports = []int{}
				}
				if !reflect.DeepEqual(got.Network.OpenPorts, ports) {
					t.Errorf("open ports = %v, want %v", got.Network.OpenPorts, ports)
				}
			}
			var kind sandboxfile.Kind
			if got.Policy != nil {
				kind = got.Policy.Kind
			}
			if kind != w.policy {
				t.Errorf("policy file = %q, want %q", kind, w.policy)
			}
			if len(got.Warnings) != len(w.warnings) {
				t.Fatalf("warnings = %q, want %d matching %q", got.Warnings, len(w.warnings), w.warnings)
			}
			for i, sub := range w.warnings {
				if !strings.Contains(got.Warnings[i], sub) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got.Warnings[i], sub)
				}
			}
		})
	}
}
