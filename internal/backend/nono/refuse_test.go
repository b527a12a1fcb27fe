package nono

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// TestRefusals: what nono would refuse at start is refused by Prepare, with
// a message naming the entry (and its file where known) and what to do.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(tr *tree, s *spec.Spec, o *Options)
		want []string // substrings of the error
	}{
		{"allow-list entry with a port (--allow-host)", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com", "models.example.com:8080"}, Source: "--allow-host"}
		}, []string{`--allow-host "models.example.com:8080": nono cannot keep an allow-list entry to port 8080`, "list the host without the port", "--sandbox-backend landlock"}},
		{"allow-list entry with a port (nono.json)", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"[2001:db8::1]:9000"}, Source: "/agents/x/sandbox/nono.json"}
		}, []string{`/agents/x/sandbox/nono.json: network.allow_domain "[2001:db8::1]:9000": nono cannot keep an allow-list entry to port 9000`}},
		// A local model on loopback beside an allow list: refused at once
		// with the fixes that work under nono alone (issue 37 item 5),
		// never a client retrying a refused connect for minutes.
		{"loopback allow-list entry with a port", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com", "127.0.0.1:11434"}, Source: "--allow-host"}
		}, []string{`--allow-host "127.0.0.1:11434": nono alone`, `"block": true, "open_port": [11434]`, "AGENT_SANDBOX_WEAKER_SANDBOX=1"}},
		{"loopback allow-list entry without a port", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"[::1]"}, Source: "/agents/x/sandbox/nono.json"}
		}, []string{`network.allow_domain "[::1]": nono alone`, `"open_port": [PORT]`}},
		{"open_port beside an allow list", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com"}, OpenPorts: []int{8080}, Source: "/agents/x/sandbox/nono.json"}
		}, []string{`/agents/x/sandbox/nono.json: network.open_port [8080]: nono alone`, `"block": true, "open_port": [8080]`}},
		{"workdir is home", func(tr *tree, s *spec.Spec, o *Options) {
			s.Workdir = s.Home
		}, []string{"working directory", "grants your whole home directory", "--workdir"}},
		{"workdir contains a credential path", func(tr *tree, s *spec.Spec, o *Options) {
			s.Workdir = tr.dir("home/.config")
		}, []string{"working directory", "contains the credential path $ROOT/home/.config/gcloud", "grant a narrower path"}},
		{"workdir above nono state", func(tr *tree, s *spec.Spec, o *Options) {
			s.Workdir = tr.dir("home/.local")
		}, []string{"working directory", "contains nono's protected state root $ROOT/home/.local/state/nono"}},
		{"closure dir is home", func(tr *tree, s *spec.Spec, o *Options) {
			s.ExecClosure = []string{s.Home}
		}, []string{"agent.toml: the closure of the agent's programs", "includes $ROOT/home, which cannot be granted: it grants your whole home directory"}},
		{"closure dir above nono state", func(tr *tree, s *spec.Spec, o *Options) {
			s.ExecClosure = []string{tr.dir("home/.local")}
		}, []string{"includes $ROOT/home/.local", "contains nono's protected state root"}},
		{"closure dir inside ~/.nono", func(tr *tree, s *spec.Spec, o *Options) {
			s.ExecClosure = []string{tr.dir("home/.nono/bin")}
		}, []string{"lies inside nono's protected state root $ROOT/home/.nono"}},
		{"closure dir inside XDG nono state", func(tr *tree, s *spec.Spec, o *Options) {
			o.Home = grant.Home{Dir: s.Home, XDGStateHome: tr.dir("xdg-state"), GOOS: "linux"}
			s.ExecClosure = []string{tr.dir("xdg-state/nono/bin")}
		}, []string{"lies inside nono's protected state root $ROOT/xdg-state/nono"}},
		{"program inside ~/.ssh", func(tr *tree, s *spec.Spec, o *Options) {
			tool := tr.file("home/.ssh/tool", 0o755)
			s.Argv, s.Exec, s.ExecClosure = []string{tool}, []string{tool}, []string{tool}
		}, []string{"agent.toml: the closure of the agent's programs", "$ROOT/home/.ssh/tool", "lies inside the credential path $ROOT/home/.ssh", "install the program somewhere else"}},
		{"program is a credential path", func(tr *tree, s *spec.Spec, o *Options) {
			// A program straight in $HOME narrows to the file; a program
			// that is itself a deny path fails.
			tool := tr.file("home/.netrc", 0o755)
			s.Exec, s.ExecClosure = append(s.Exec, tool), []string{tool}
		}, []string{"includes $ROOT/home/.netrc", "lies inside the credential path $ROOT/home/.netrc"}},
		{"allow contains a credential path", func(tr *tree, s *spec.Spec, o *Options) {
			s.AgentDir = tr.dir("agents/x")
			s.Allow = append(s.Allow, tr.dir("home/.config"))
		}, []string{"agents/x/sandbox/nono.json: filesystem.allow: $ROOT/home/.config", "contains the credential path $ROOT/home/.config/gcloud"}},
		{"read inside a credential path", func(tr *tree, s *spec.Spec, o *Options) {
			s.Read = append(s.Read, tr.file("home/.aws/config", 0o600))
		}, []string{"filesystem.read: $ROOT/home/.aws/config", "lies inside the credential path $ROOT/home/.aws"}},
		{"config path above nono state", func(tr *tree, s *spec.Spec, o *Options) {
			d := tr.dir("home/.local/state")
			s.ConfigPaths = []string{d}
			s.Allow = append(s.Allow, d)
		}, []string{"builtin:t/agent.toml: config_paths: $ROOT/home/.local/state", "contains nono's protected state root"}},
		{"git dir is a parent of home", func(tr *tree, s *spec.Spec, o *Options) {
			s.GitDirs = []string{tr.root}
		}, []string{"linked git dir", "is a parent of your home directory"}},
		{"socket dir is a file", func(tr *tree, s *spec.Spec, o *Options) {
			o.UnixSocketDirBind = []string{tr.file("home/sock", 0o600)}
		}, []string{"filesystem.unix_socket_dir_bind: $ROOT/home/sock" + " is not a directory"}},
		{"socket dir inside a keyring", func(tr *tree, s *spec.Spec, o *Options) {
			o.UnixSocketDirBind = []string{tr.dir("home/.local/share/keyrings/sock")}
		}, []string{"unix_socket_dir_bind", "lies inside the credential path $ROOT/home/.local/share/keyrings"}},
		{"unknown network profile", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, Profile: "claude", Source: "/agents/x/sandbox/nono.json"}
		}, []string{"/agents/x/sandbox/nono.json: network.network_profile \"claude\" is not a nono network profile", "claude-code", "minimal"}},
		{"empty allow list with open ports", func(tr *tree, s *spec.Spec, o *Options) {
			// nono cannot block every host but these ports: refused, not opened.
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{}, OpenPorts: []int{11434}, ListenPorts: []int{}, Source: "/agents/x/sandbox/nono.json"}
		}, []string{"/agents/x/sandbox/nono.json: network.allow_domain is empty (no host reachable) and network.open_port/listen_port [11434]/[] are set", "nono cannot block every host", "list the hosts", "drop the ports"}},
		{"empty allow list with listen ports", func(tr *tree, s *spec.Spec, o *Options) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, ListenPorts: []int{8080}, Source: "/agents/x/sandbox/nono.json"}
		}, []string{"network.allow_domain is empty", "[]/[8080]"}},
		{"a grant resolving to a name with a glob character", func(tr *tree, s *spec.Spec, o *Options) {
			// nono would expand it; grants as written are refused earlier.
			s.Allow = append(s.Allow, tr.dir("home/odd*name"))
		}, []string{"$ROOT/home/odd*name contains one of \"*?[\", which nono reads as a glob pattern", "--sandbox-backend landlock"}},
		{"dangerous command", func(tr *tree, s *spec.Spec, o *Options) {
			s.Argv = []string{tr.file("usr/bin/rm", 0o755), "-rf"}
		}, []string{"builtin:t/agent.toml: command", "nono refuses to start a command named \"rm\"", "dangerous_commands"}},
		{"dangerous linux command", func(tr *tree, s *spec.Spec, o *Options) {
			s.Argv = []string{"/usr/bin/systemctl"}
		}, []string{"\"systemctl\""}},
		{"dangerous macOS command", func(tr *tree, s *spec.Spec, o *Options) {
			s.GOOS = "darwin"
			s.Argv = []string{"/opt/homebrew/bin/brew"}
		}, []string{"\"brew\""}},
		{"set_env NONO_", func(tr *tree, s *spec.Spec, o *Options) {
			s.EnvSet = map[string]string{"NONO_ALLOW": "/"}
		}, []string{"builtin:t/agent.toml: set_env.NONO_ALLOW", "reserved"}},
		{"env NONO_", func(tr *tree, s *spec.Spec, o *Options) {
			s.EnvPass = append(s.EnvPass, "NONO_PROFILE")
		}, []string{"builtin:t/agent.toml: env: \"NONO_PROFILE\"", "clears them"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			s := baseSpec(tr, "t")
			o := Options{Path: "/usr/bin/nono"}
			c.edit(tr, &s, &o)
			_, err := Prepare(s, o)
			if err == nil {
				t.Fatal("Prepare accepted it")
			}
			for _, w := range c.want {
				w = strings.ReplaceAll(w, "$ROOT", tr.root)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestAccepted: near misses are accepted.
func TestAccepted(t *testing.T) {
	cases := []struct {
		name string
		edit func(tr *tree, s *spec.Spec)
	}{
		{"sibling of a credential path", func(tr *tree, s *spec.Spec) {
			s.Allow = append(s.Allow, tr.dir("home/.sshx"), tr.dir("home/.config/tool"))
		}},
		{"dangerous name on the other platform", func(tr *tree, s *spec.Spec) {
			s.Argv = []string{"/opt/homebrew/bin/brew"} // macOS-only entry, Linux run
		}},
		{"dangerous name as an argument", func(tr *tree, s *spec.Spec) {
			s.Argv = append(s.Argv, "rm")
		}},
		{"agent-sandbox state beside nono's", func(tr *tree, s *spec.Spec) {
			s.Allow = append(s.Allow, tr.dir("home/.local/state/opencode"))
		}},
		{"every network profile", func(tr *tree, s *spec.Spec) {
			s.Network = posture.Network{Mode: posture.NetAllowlist, Profile: "enterprise", Source: "x"}
		}},
		{"program in ~/.local/bin", func(tr *tree, s *spec.Spec) {
			p := tr.file("home/.local/bin/tool", 0o755)
			s.Exec = []string{p}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			s := baseSpec(tr, "t")
			c.edit(tr, &s)
			if _, err := Prepare(s, Options{Path: "/usr/bin/nono"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, name := range NetworkProfiles {
		tr := newTree(t)
		s := baseSpec(tr, "t")
		s.Network = posture.Network{Mode: posture.NetAllowlist, Profile: name, Source: "x"}
		if _, err := Prepare(s, Options{Path: "/usr/bin/nono"}); err != nil {
			t.Errorf("network_profile %q: %v", name, err)
		}
	}
}

// TestNetworkProfilesMatchNono cross-checks NetworkProfiles against nono's
// network-policy.json.
func TestNetworkProfilesMatchNono(t *testing.T) {
	var np struct {
		Profiles map[string]json.RawMessage `json:"profiles"`
	}
	if err := json.Unmarshal(referenceFile(t, "network-policy.json"), &np); err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range np.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	got := append([]string{}, NetworkProfiles...)
	sort.Strings(got)
	if !slices.Equal(got, names) {
		t.Errorf("NetworkProfiles = %q, nono's network-policy.json has %q", got, names)
	}
}

// policyGroup is one group of nono's policy.json.
type policyGroup struct {
	Platform string `json:"platform"`
	Required bool   `json:"required"`
	Deny     struct {
		Access   []string `json:"access"`
		Commands []string `json:"commands"`
	} `json:"deny"`
	Allow struct {
		Read []string `json:"read"`
	} `json:"allow"`
}

func policyGroups(t *testing.T) map[string]policyGroup {
	t.Helper()
	var p struct {
		Groups map[string]policyGroup `json:"groups"`
	}
	if err := json.Unmarshal(referenceFile(t, "policy.json"), &p); err != nil {
		t.Fatal(err)
	}
	return p.Groups
}

// goosOf maps policy.json platforms to GOOS ("" for every platform).
func goosOf(platform string) string {
	if platform == "macos" {
		return "darwin"
	}
	return platform
}

// TestDangerousCommandsMatchNono cross-checks DangerousCommands against
// the dangerous_commands* groups of nono's policy.json.
func TestDangerousCommandsMatchNono(t *testing.T) {
	want := map[string][]string{}
	for name, g := range policyGroups(t) {
		if strings.HasPrefix(name, "dangerous_commands") {
			want[goosOf(g.Platform)] = append(want[goosOf(g.Platform)], g.Deny.Commands...)
		}
	}
	if len(want) == 0 {
		t.Fatal("no dangerous_commands groups in policy.json")
	}
	for plat := range want {
		w, g := uniq.Sorted(want[plat]), uniq.Sorted(DangerousCommands[plat])
		if !slices.Equal(w, g) {
			t.Errorf("DangerousCommands[%q] = %q, policy.json has %q", plat, g, w)
		}
	}
	for plat := range DangerousCommands {
		if _, ok := want[plat]; !ok {
			t.Errorf("DangerousCommands[%q] has no group in policy.json", plat)
		}
	}
}

// TestDenyPathsMatchNono: the re-check knows every path of nono's required
// deny groups, on Linux and macOS (grant.Home.CredentialPaths, through
// grant.Checker).
func TestDenyPathsMatchNono(t *testing.T) {
	groups := policyGroups(t)
	for _, goos := range []string{"linux", "darwin"} {
		h := grant.Home{Dir: "/h", XDGStateHome: "/h/.local/state", GOOS: goos}
		known := map[string]bool{}
		for _, p := range h.CredentialPaths() {
			known[p] = true
		}
		n := 0
		for name, g := range groups {
			if !g.Required || (g.Platform != "" && goosOf(g.Platform) != goos) {
				continue
			}
			for _, p := range g.Deny.Access {
				n++
				abs := p
				if strings.HasPrefix(p, "~/") {
					abs = filepath.Join(h.Dir, p[2:])
				}
				if !known[abs] {
					t.Errorf("%s: %s (required group %s) is not checked", goos, p, name)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no required deny groups found in policy.json", goos)
		}
	}
	if _, ok := groups["nix_runtime"]; !ok {
		t.Error("policy.json has no nix_runtime group, which the profile includes on Nix hosts")
	}
}
