package sbx_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/sbx"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt")

// render is a prepared run as --dry-run shows it, with the temporary root
// replaced by $ROOT and the mount hash by HASH8 (it depends on the root).
func render(p sbx.Prepared, root string) string {
	var b strings.Builder
	b.WriteString("# name " + p.Name + "\n")
	if p.Refusal != "" {
		b.WriteString("# refusal: " + p.Refusal + "\n")
	}
	for _, w := range p.Warnings {
		b.WriteString("# warning: " + w + "\n")
	}
	for _, c := range p.Steps {
		b.WriteString("# " + c.Note + "\n")
		b.WriteString(plan.Quote(c.Argv) + "\n")
	}
	out := strings.ReplaceAll(b.String(), root, "$ROOT")
	return regexp.MustCompile(`(agent-sandbox-[a-z0-9.-]+-)[0-9a-f]{8}\b`).ReplaceAllString(out, "${1}HASH8")
}

func TestGoldenPlans(t *testing.T) {
	const sbxPath = "/usr/local/bin/sbx"
	cases := []struct {
		name string
		make func(t *testing.T) (spec.Spec, sbx.Options)
	}{
		{"pi-allowlist", func(t *testing.T) (spec.Spec, sbx.Options) {
			s, o := piSpec(t, "0.73.1")
			s.Argv = []string{"/usr/bin/pi", "-p", "fix the tests"}
			o.VersionCommand = []string{"pi", "--version"}
			s.EnvSet = map[string]string{"PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
			s.EnvPass = []string{"ANTHROPIC_API_KEY", "HOME"}
			s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com", "localhost:11434", "10.1.2.3"}}
			o.Path, o.Getenv = sbxPath, func(string) string { return "sk-never-shown" }
			return s, o
		}},
		{"claude-offline", func(t *testing.T) (spec.Spec, sbx.Options) {
			s := newSpec(t, "claude")
			s.AgentDir = "" // built-in: no folder to mount
			s.Read = nil
			cfg, file := filepath.Join(s.Home, ".claude"), filepath.Join(s.Home, ".claude.json")
			os.MkdirAll(cfg, 0o755)
			s.ConfigPaths = []string{cfg, file}
			s.Allow = append(s.Allow, cfg, file)
			s.Read = []string{"/nonexistent/etc/claude-code"}
			s.Argv = []string{"/usr/bin/claude", "--help"}
			s.EnvSet = map[string]string{"DISABLE_AUTOUPDATER": "1"}
			s.Network = posture.Network{Mode: posture.NetBlocked}
			env := map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000/v1", "ANTHROPIC_API_KEY": "sk-secret"}
			return s, sbx.Options{Path: sbxPath, Getenv: func(k string) string { return env[k] },
				Install: "npm:@anthropic-ai/claude-code", VersionCommand: []string{"claude", "--version"}, LoopbackEnv: []string{"ANTHROPIC_BASE_URL"}}
		}},
		{"custom-grants-open-tty", func(t *testing.T) (spec.Spec, sbx.Options) {
			s := newSpec(t, "my_tool")
			root := filepath.Dir(s.Workdir)
			for _, d := range []string{"data", "scratch", "out", "main/.git/worktrees/proj", "main/.git"} {
				os.MkdirAll(filepath.Join(root, d), 0o755)
			}
			s.GitDirs = []string{root + "/main/.git/worktrees/proj", root + "/main/.git"}
			s.Read = append(s.Read, root+"/data")
			s.Allow = append(s.Allow, root+"/out", root+"/scratch", root+"/main/.git/worktrees/proj", root+"/main/.git")
			s.Argv = []string{"/opt/tool/bin/tool", "--it's", "$HOME"}
			return s, sbx.Options{Path: sbxPath, TTY: true, Verbose: true, Home: "~/.tool-home"}
		}},
		{"shell-without-sbx", func(t *testing.T) (spec.Spec, sbx.Options) {
			s := newSpec(t, "shell")
			s.AgentDir, s.Read = "", nil
			s.Argv = []string{"/bin/bash"}
			return s, sbx.Options{Path: "sbx"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, o := c.make(t)
			p, err := sbx.Prepare(s, o)
			if err != nil {
				t.Fatal(err)
			}
			got := render(p, filepath.Dir(s.Workdir))
			file := filepath.Join("testdata", "golden", c.name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(file), 0o755)
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run `go test ./internal/backend/sbx -run TestGoldenPlans -update` to create it)", err)
			}
			if got != string(want) {
				t.Errorf("plan differs from %s (-update rewrites it):\n--- got\n%s--- want\n%s", file, got, want)
			}
			if strings.Contains(got, "sk-") {
				t.Error("a host secret reached the plan")
			}
		})
	}
}

// TestNetworkSemanticsThroughPosture runs each rule of the seed's "Network
// semantics" from the flags and the folder file to the printed commands:
// CLI precedence (--offline > --allow-host > file > open) is resolved by
// posture, then sbx emits exactly one rule (or none).
func TestNetworkSemanticsThroughPosture(t *testing.T) {
	file := &sbxFile
	for _, c := range []struct {
		name     string
		flags    posture.Flags
		want     string // the single policy command's tail, "" for none
		additive bool
	}{
		{"open", posture.Flags{}, "", false},
		{"file allowlist", posture.Flags{Sandbox: true}, "allow network --sandbox NAME 'api.example.com,*.api.example.com,host.docker.internal,10.0.0.1'", true},
		{"--allow-host beats the file", posture.Flags{AllowHosts: []string{"other.org", "127.0.0.1:8080"}}, "allow network --sandbox NAME 'other.org,*.other.org,host.docker.internal:8080'", true},
		{"--offline beats --allow-host", posture.Flags{Offline: true, AllowHosts: []string{"other.org"}}, "deny network --sandbox NAME '**'", false},
		// An empty allow_domain list: allow-list mode with no host, deny '**'.
		{"empty allowlist", posture.Flags{}, "deny network --sandbox NAME '**'", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := file
			switch c.name {
			case "open":
				f = nil
			case "empty allowlist":
				f = &sandboxfile.File{Kind: sandboxfile.Sbx, Path: "/agents/a/sandbox/sbx.json", Sandbox: true,
					Network: sandboxfile.Network{AllowList: true, AllowDomain: []string{}}}
			}
			pst, err := posture.Resolve(posture.Input{Agent: "a", Flags: withBackend(c.flags), Sbx: f, Host: posture.Host{GOOS: "linux"}})
			if err != nil {
				t.Fatal(err)
			}
			s := newSpec(t, "a")
			s.Network = pst.Network
			p, err := sbx.Prepare(s, sbx.Options{Path: "/bin/sbx"})
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, st := range p.Steps {
				if len(st.Argv) > 1 && st.Argv[1] == "policy" {
					rules = append(rules, strings.ReplaceAll(plan.Quote(st.Argv[2:]), p.Name, "NAME"))
				}
			}
			switch {
			case c.want == "" && len(rules) != 0:
				t.Errorf("open network emits rules %q", rules)
			case c.want != "" && (len(rules) != 1 || rules[0] != c.want):
				t.Errorf("rules %q, want exactly [%s]", rules, c.want)
			}
			hasAdditive := false
			for _, w := range p.Warnings {
				hasAdditive = hasAdditive || w == sbx.AdditiveWarning
			}
			if hasAdditive != c.additive {
				t.Errorf("additive-policy warning: %v, want %v", hasAdditive, c.additive)
			}
		})
	}
}

// TestPiExtensionRewritesModelsJSON loads the generated extension in node
// (when installed) with a stand-in for pi's extension API and a models.json
// holding loopback and remote providers.
func TestPiExtensionRewritesModelsJSON(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: cannot load the generated pi extension")
	}
	dir := t.TempDir()
	agentDir := filepath.Join(dir, "home", ".pi", "agent")
	os.MkdirAll(agentDir, 0o755)
	models := `{"providers": {
	  "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "x", "models": [{"id": "m"}]},
	  "lmstudio": {"baseUrl": "http://127.0.0.1:1234/v1"},
	  "remote": {"baseUrl": "https://api.example.com/v1"},
	  "nobase": {"modelOverrides": {}}
	}}`
	os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644)
	// pi loads the .ts through jiti; the file is plain JavaScript, so node
	// can import a copy of it as an ES module.
	ext := filepath.Join(dir, "ext.mjs")
	if err := sbx.WritePiExtension(filepath.Join(dir, "sbx", "pi-loopback-providers.ts")); err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "sbx", "pi-loopback-providers.ts"))
	os.WriteFile(ext, src, 0o644)
	driver := `
const { pathToFileURL } = await import("node:url");
const { default: init, rewrite } = await import(pathToFileURL(process.argv[process.argv.length - 1]).href);
const registered = {};
const handlers = {};
init({ registerProvider: (n, c) => { registered[n] = c; }, on: (e, h) => { handlers[e] = h; } });
const models = [{ provider: "x", baseUrl: "http://localhost:8080/v1" }, { provider: "y", baseUrl: "https://api.example.com" }];
handlers.session_start({}, { modelRegistry: { getAll: () => models } });
console.log(JSON.stringify({ registered, models: models.map((m) => m.baseUrl), same: rewrite("http://user@localhost.example.com:1") }));
`
	cmd := exec.Command(node, "--input-type=module", "-e", driver, ext)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "PI_CODING_AGENT_DIR=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := `{"registered":{"ollama":{"baseUrl":"http://host.docker.internal:11434/v1"},"lmstudio":{"baseUrl":"http://host.docker.internal:1234/v1"}},"models":["http://host.docker.internal:8080/v1","https://api.example.com"],"same":"http://user@localhost.example.com:1"}`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("extension result\n got %s\nwant %s", got, want)
	}
}

var sbxFile = sandboxfile.File{
	Kind: sandboxfile.Sbx, Path: "/agents/a/sandbox/sbx.json", Sandbox: true,
	Network: sandboxfile.Network{AllowDomain: []string{"api.example.com", "localhost", "10.0.0.1"}},
}

func withBackend(f posture.Flags) posture.Flags {
	f.Backend = posture.Sbx
	return f
}
