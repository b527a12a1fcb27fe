package nono

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// baseEnv is a short stand-in for plan.BaseEnv.
var baseEnv = []string{"HOME", "LANG", "PATH", "TERM"}

// baseSpec is a sandboxed run of agent id in a fresh tree, shaped as
// plan.Build makes it: the workdir and the agent's parts of the state dir
// are in Allow.
func baseSpec(tr *tree, id string) spec.Spec {
	home := tr.dir("home")
	wd := tr.dir("work/project")
	state := tr.path("home/.local/state/agent-sandbox/agents/" + id)
	agent := tr.file("usr/bin/"+id, 0o755)
	return spec.Spec{
		AgentID: id, Workdir: wd, StateDir: state, Home: home,
		Argv: []string{agent}, CommandFound: true,
		Allow: []string{wd, state + "/mise-cache", state + "/tmp"}, Read: []string{}, Write: []string{},
		Exec:    []string{agent},
		Network: posture.Network{Mode: posture.NetOpen, Source: "default"},
		EnvPass: append([]string{}, baseEnv...), EnvSet: map[string]string{},
		GOOS: "linux",
	}
}

// withClosure gives a spec whose case leaves ExecClosure unset the closure
// plan computes for plain binaries: the directory holding each program and
// the one holding its symlink target.
func withClosure(s spec.Spec) spec.Spec {
	if s.ExecClosure != nil {
		return s
	}
	s.ExecClosure = []string{}
	for _, e := range s.Exec {
		s.ExecClosure = append(s.ExecClosure, filepath.Dir(e))
		if r, err := filepath.EvalSymlinks(e); err == nil {
			s.ExecClosure = append(s.ExecClosure, filepath.Dir(r))
		}
	}
	return s
}

// TestEmptyClosureGrantsNoProgramDir: plan leaves the closure empty when a
// program's chain runs through a path the agent can write; the profile
// then grants nothing from the program's location, neither its directory
// nor its symlink target's.
func TestEmptyClosureGrantsNoProgramDir(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "claude")
	target := tr.file("opt/elsewhere/claude", 0o755)
	bin := tr.symlink("work/project/bin/claude", target)
	s.Argv, s.Exec, s.ExecClosure = []string{bin}, []string{bin}, []string{}
	p, err := Prepare(s, Options{Path: "/usr/bin/nono"})
	if err != nil {
		t.Fatal(err)
	}
	fs := p.Profile.Filesystem
	for _, g := range append(append(fs.Read, fs.ReadFile...), append(fs.Allow, fs.AllowFile...)...) {
		if g == tr.path("opt/elsewhere") || g == target || g == tr.path("opt") {
			t.Errorf("empty closure, yet the profile grants %s (the symlink target's location): %+v", g, fs)
		}
	}
}

type goldenCase struct {
	name string
	// make builds the spec and options in the test's tree.
	make func(tr *tree) (spec.Spec, Options)
}

var goldenCases = []goldenCase{
	{"claude-allowlist", func(tr *tree) (spec.Spec, Options) {
		// A built-in agent like claude: config dir and file, a missing
		// cache dir and read path, a native install through a symlink.
		s := baseSpec(tr, "claude")
		target := tr.file("home/.local/share/claude/versions/2.0.0", 0o755)
		bin := tr.symlink("home/.local/bin/claude", target)
		s.Argv = []string{bin, "--continue"}
		s.Exec = []string{bin}
		cfgDir, cfgFile := tr.dir("home/.claude"), tr.file("home/.claude.json", 0o600)
		cache := tr.path("home/.cache/claude-cli-nodejs")
		s.ConfigPaths = []string{cfgDir, cfgFile, cache}
		s.Allow = append(s.Allow, cfgDir, cfgFile, cache)
		s.Read = []string{tr.path("etc/claude-code")}
		s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"api.anthropic.com", "platform.claude.com", "claude.ai"}, OpenPorts: []int{}, ListenPorts: []int{}, Source: "builtin:claude/sandbox/nono.json"}
		s.EnvPass = append(s.EnvPass, "ANTHROPIC_API_KEY", "EDITOR")
		s.EnvSet = map[string]string{"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"shell-blocked", func(tr *tree) (spec.Spec, Options) {
		s := baseSpec(tr, "shell")
		sh := tr.file("bin/sh", 0o755)
		s.Argv, s.Exec = []string{sh}, []string{sh}
		s.Network = posture.Network{Mode: posture.NetBlocked, Source: "builtin:shell/sandbox/nono.json"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"shell-blocked-verbose", func(tr *tree) (spec.Spec, Options) {
		s := baseSpec(tr, "shell")
		sh := tr.file("bin/sh", 0o755)
		s.Argv, s.Exec = []string{sh, "-c", "echo hi"}, []string{sh}
		s.Network = posture.Network{Mode: posture.NetBlocked, Source: "--offline"}
		return s, Options{Path: "/usr/bin/nono", Verbose: true}
	}},
	{"folder-grants", func(tr *tree) (spec.Spec, Options) {
		// An agent folder on disk with read/write/allow files and dirs, a
		// socket dir, exec_paths, and macOS rules (dropped on Linux).
		s := baseSpec(tr, "tool")
		s.AgentDir = tr.dir("agents/tool")
		s.Read = []string{s.AgentDir, tr.dir("data"), tr.file("home/notes.txt", 0o644), tr.path("home/missing-read")}
		s.Write = []string{tr.dir("out"), tr.file("home/out.log", 0o644)}
		s.Allow = append(s.Allow, tr.dir("home/scratch"), tr.file("home/.toolrc.json", 0o600), tr.path("home/.tool-missing"))
		sock := tr.dir("home/.agent-browser")
		s.Allow = append(s.Allow, tr.path("home/.agent-browser"))
		git := tr.file("opt/git/bin/git", 0o755)
		s.Exec = append(s.Exec, git)
		s.EnvSet = map[string]string{"TOOL_MODE": "sandboxed"}
		return s, Options{Path: "/usr/bin/nono", UnixSocketDirBind: []string{sock}, SeatbeltRules: []string{"(allow mach-register)", "(allow iokit-open)"}}
	}},
	{"ports-allowlist", func(tr *tree) (spec.Spec, Options) {
		// A local model: the allowlist must name localhost and open its
		// port. On macOS: on Linux nono alone refuses the direct connect
		// to the port in its proxy mode, and Prepare refuses the recipe
		// (TestRefusals).
		s := baseSpec(tr, "pi")
		s.GOOS = "darwin"
		s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"localhost", "api.example.com", "127.0.0.1"}, OpenPorts: []int{11434, 8080, 11434}, ListenPorts: []int{3000}, Source: "/agents/pi/sandbox/nono.json"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"empty-allowlist", func(tr *tree) (spec.Spec, Options) {
		// {"network": {"allow_domain": []}}: allow-list mode with no host
		// is nono's block (an empty allow_domain would leave nono open).
		s := baseSpec(tr, "pi")
		s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{}, OpenPorts: []int{}, ListenPorts: []int{}, Source: "/agents/pi/sandbox/nono.json"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"ports-open", func(tr *tree) (spec.Spec, Options) {
		s := baseSpec(tr, "pi")
		s.Network = posture.Network{Mode: posture.NetOpen, AllowDomains: []string{}, OpenPorts: []int{9222}, ListenPorts: []int{8080}, Source: "/agents/pi/sandbox/nono.json"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"network-profile", func(tr *tree) (spec.Spec, Options) {
		s := baseSpec(tr, "dev")
		s.AgentDir = tr.dir("agents/dev")
		s.Read = []string{s.AgentDir}
		s.Network = posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"internal.example.com"}, Profile: "developer", OpenPorts: []int{}, ListenPorts: []int{}, Source: filepath.Join(s.AgentDir, "sandbox/nono.json")}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"block-with-ports", func(tr *tree) (spec.Spec, Options) {
		// block: true keeps the file's own loopback ports.
		s := baseSpec(tr, "local-model")
		s.Network = posture.Network{Mode: posture.NetBlocked, OpenPorts: []int{11434}, ListenPorts: []int{3000}, Source: "/agents/local-model/sandbox/nono.json"}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"git-worktree", func(tr *tree) (spec.Spec, Options) {
		// The workdir is a linked worktree: its git dir and the common dir
		// live in the main checkout, outside the workdir.
		s := baseSpec(tr, "codex")
		gitDir := tr.dir("src/main/.git/worktrees/project")
		common := tr.dir("src/main/.git")
		s.GitDirs = []string{gitDir, common}
		s.Allow = append(s.Allow, gitDir, common)
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"nix-store", func(tr *tree) (spec.Spec, Options) {
		// A Nix host: nix_runtime, and the closure from pathresolve.
		s := baseSpec(tr, "claude")
		bin := tr.file("nix/store/aaaa-claude-code/bin/claude", 0o755)
		s.Argv, s.Exec = []string{bin}, []string{bin}
		s.ExecClosure = []string{
			tr.dir("nix/store/aaaa-claude-code"),
			tr.dir("nix/store/bbbb-glibc-2.40/lib"),
			tr.file("nix/store/cccc-nodejs/bin/node", 0o755),
			tr.dir("nix/store/aaaa-claude-code"),
		}
		return s, Options{Path: "/run/current-system/sw/bin/nono", NixStore: true}
	}},
	{"exec-in-home", func(tr *tree) (spec.Spec, Options) {
		// A program straight in $HOME: its directory is the home, so only
		// the file is granted.
		s := baseSpec(tr, "mine")
		tool := tr.file("home/mytool", 0o755)
		s.Argv, s.Exec, s.ExecClosure = []string{tool}, []string{tool}, []string{tool}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"env-set", func(tr *tree) (spec.Spec, Options) {
		// set_env: plain values go to set_vars; PATH and "$" values go
		// through nono's environment.
		s := baseSpec(tr, "envy")
		s.EnvSet = map[string]string{"PLAIN": "1", "PATH": "/opt/tools/bin:/usr/bin", "GREETING": "hello $USER"}
		s.EnvPass = append(s.EnvPass, "EDITOR", "EDITOR")
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"git-config", func(tr *tree) (spec.Spec, Options) {
		// git's configuration (plan.nonoGitConfig): the user's files and
		// the system file, each granted read-only as a single file.
		s := baseSpec(tr, "coder")
		s.UserConfig = []string{tr.file("home/.gitconfig", 0o644), tr.file("home/.config/git/ignore", 0o644), tr.file("etc/gitconfig", 0o644)}
		return s, Options{Path: "/usr/bin/nono"}
	}},
	{"darwin-seatbelt", func(tr *tree) (spec.Spec, Options) {
		// The seed's agent-browser folder on macOS: rules are kept.
		s := baseSpec(tr, "browser")
		s.GOOS = "darwin"
		s.AgentDir = tr.dir("agents/browser")
		s.Read = []string{s.AgentDir}
		sock := tr.dir("home/.agent-browser")
		s.Allow = append(s.Allow, sock)
		s.Network = posture.Network{Mode: posture.NetOpen, OpenPorts: []int{0}, ListenPorts: []int{}, Source: filepath.Join(s.AgentDir, "sandbox/nono.json")}
		return s, Options{Path: "/opt/homebrew/bin/nono", UnixSocketDirBind: []string{sock}, SeatbeltRules: []string{"(allow mach-register)", "(allow iokit-open)"}}
	}},
}

// golden is what a golden file holds for one case.
type golden struct {
	Profile json.RawMessage `json:"profile"`
	Argv    []string        `json:"argv"`
	Env     []string        `json:"env"`
	Notes   []string        `json:"notes"`
	Refusal string          `json:"refusal,omitempty"`
}

// TestGolden builds representative profiles, compares them (with the
// launch and the notes) to testdata/golden/<case>.json (refresh with
// `go test ./internal/backend/nono -update`), validates every profile against
// nono's JSON schema and, when nono is on PATH, with `nono profile
// validate`.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			s, o := c.make(tr)
			s = withClosure(s)
			p, err := Prepare(s, o)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			data, err := Marshal(p.Profile)
			if err != nil {
				t.Fatal(err)
			}
			validateSchema(t, data)
			validateWithNono(t, data, s.GOOS)

			g := golden{Profile: json.RawMessage(tr.anon(string(data))), Argv: p.Steps[0].Argv, Env: p.Steps[0].Env, Notes: p.Notes, Refusal: p.Refusal}
			for i := range g.Argv {
				g.Argv[i] = tr.anon(g.Argv[i])
			}
			for i := range g.Env {
				g.Env[i] = tr.anon(g.Env[i])
			}
			for i := range g.Notes {
				g.Notes[i] = tr.anon(g.Notes[i])
			}
			if g.Notes == nil {
				g.Notes = []string{}
			}
			got := mustJSON(t, g)
			file := filepath.Join("testdata", "golden", c.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run `go test ./internal/backend/nono -update` to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (run `go test ./internal/backend/nono -update` and review the diff):\n--- got\n%s", file, got)
			}
		})
	}
}

// TestDeterministic builds the same spec twice, with its lists shuffled,
// and expects byte-identical profiles.
func TestDeterministic(t *testing.T) {
	tr := newTree(t)
	s, o := goldenCases[3].make(tr) // folder-grants
	s = withClosure(s)
	p1, err := Prepare(s, o)
	if err != nil {
		t.Fatal(err)
	}
	rev := func(l []string) []string {
		out := make([]string, len(l))
		for i, x := range l {
			out[len(l)-1-i] = x
		}
		return out
	}
	s.Read, s.Write, s.Allow, s.Exec = rev(s.Read), rev(s.Write), rev(s.Allow), rev(s.Exec)
	s.EnvPass = rev(s.EnvPass)
	p2, err := Prepare(s, o)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Marshal(p1.Profile)
	b, _ := Marshal(p2.Profile)
	if !bytes.Equal(a, b) {
		t.Errorf("profile depends on input order:\n%s\n---\n%s", a, b)
	}
	if !slices.Equal(p1.Notes, p2.Notes) {
		t.Errorf("notes depend on input order:\n%q\n%q", p1.Notes, p2.Notes)
	}
}

// TestSchemaCatchesMistakes makes sure the schema check has teeth: a key
// nono does not know, a bad enum value and a bad allow_vars pattern fail.
func TestSchemaCatchesMistakes(t *testing.T) {
	for _, doc := range []string{
		`{"filesystem": {"allow_dir": ["/x"]}}`,
		`{"bogus": true}`,
		`{"workdir": {"access": "rw"}}`,
		`{"environment": {"allow_vars": ["A*B"]}}`,
		`{"network": {"open_port": ["80"]}}`,
	} {
		if err := checkSchema(t, []byte(doc)); err == nil {
			t.Errorf("schema accepted %s", doc)
		}
	}
	if err := checkSchema(t, []byte(`{"workdir": {"access": "readwrite"}}`)); err != nil {
		t.Errorf("schema rejected a valid profile: %v", err)
	}
}
