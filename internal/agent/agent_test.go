package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`command = "x"` + "\nbogus = 1", "bogus: unknown key"},
		{`command = "x"` + "\n[sbx]\nimage = 1", "sbx.image: unknown key"},
		{`command = 1`, "agent.toml"},
		{`args = ["a"]`, "command: missing"},
		{`command = "bin/x"`, `command: "bin/x" is a relative path`},
		{`command = "x"` + "\nconfig_paths = [\"rel\"]", `config_paths[0]: "rel" is relative`},
		{`command = "x"` + "\nread_paths = [\"./r\"]", `read_paths[0]: "./r" is relative`},
		{`command = "x"` + "\nexec_paths = [\"git\"]", `exec_paths[0]: "git" must be an absolute path`},
		{`command = "x"` + "\nconfig_paths = [\"~/.tool*\"]", `config_paths[0]: "~/.tool*" contains the glob character "*"`},
		{`command = "x"` + "\nread_paths = [\"/etc/[ab]\"]", `read_paths[0]: "/etc/[ab]" contains the glob character "["`},
		{`command = "x"` + "\nexec_paths = [\"/usr/bin/g?t\"]", `exec_paths[0]: "/usr/bin/g?t" contains the glob character "?"`},
		{`command = "x"` + "\nenv = [\"A-B\"]", `env[0]: "A-B" is not a variable name`},
		{`command = "x"` + "\n[set_env]\n\"1A\" = \"x\"", `set_env.1A: not a variable name`},
		{`command = "x"` + "\n[sbx]\ninstall = \"pip:x\"", `sbx.install: "pip:x"`},
		{`command = "x"` + "\n[sbx]\nhome = \"rel\"", `sbx.home: "rel"`},
		{`command = "x" = "y"`, "/f/agent.toml:1:"},
		{`command = "x"` + "\nallow_edit = [\".git/objects\"]", `allow_edit[0]: ".git/objects" is not a protected path`},
		{`command = "x"` + "\n[[credentials]]\nenv = \"K\"\nupstream = \"https://a\"\nheader = \"x-api-key\"", `credentials[0].base_url_env: "" is not a variable name`},
		{`command = "x"` + "\n[[credentials]]\nenv = \"K\"\nupstream = \"https://a\"\nheader = \"x-api-key\"\nbase_url_args = [\"--base\", \"URL\"]", `credentials[0].base_url_args: ["--base" "URL"]: no argument holds {base_url}`},
		{`command = "x"` + "\n[[credentials]]\nenv = \"K\"\nupstream = \"https://a\"\nheader = \"x-api-key\"\nbase_url_env = \"B\"\nsource = \"vault:x\"", `credentials[0].source: "vault:x"`},
		{`command = "x"` + "\n[[credentials]]\nenv = \"K\"\nbase_url_env = \"B\"\nupstream = \"ftp://a\"\nheader = \"x-api-key\"", `credentials[0].upstream: "ftp://a"`},
		{`command = "x"` + "\n[[credentials]]\nenv = \"K\"\nupstream = \"https://ghe.example/api/v3\"\nheader = \"authorization\"\nintercept = true", `credentials[0].upstream: "https://ghe.example/api/v3": with intercept = true, want an https origin without a path`},
	}
	for _, tt := range tests {
		_, err := ParseConfig("/f/agent.toml", []byte(tt.src))
		if err == nil {
			t.Errorf("%q: no error", tt.src)
			continue
		}
		if !strings.HasPrefix(err.Error(), "/f/agent.toml") || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q, want one line naming the file and containing %q", tt.src, err, tt.want)
		}
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"claude", "a", "my-agent_2.0"} {
		if err := CheckID(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Claude", ".hidden", "-x", "a b", "a/b", strings.Repeat("a", 65), "é"} {
		if CheckID(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestBuiltins: every built-in loads, runs sandboxed by default (ships
// nono.json) and names a command.
func TestBuiltins(t *testing.T) {
	names := BuiltinNames()
	want := []string{"claude", "codex", "gemini", "opencode", "pi", "shell"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("built-ins = %v, want %v", names, want)
	}
	for _, n := range names {
		f, err := LoadBuiltin(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if f.Nono == nil || f.Nono.OptedOut() || f.Config.Command == "" || !f.Builtin() {
			t.Errorf("%s: not sandboxed by default: %+v", n, f)
		}
	}
	if _, err := LoadBuiltin("nope"); err == nil {
		t.Error("LoadBuiltin(nope) succeeded")
	}
}

func writeFolder(t *testing.T, dir, toml string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	envA := filepath.Join(root, "envA")
	envB := filepath.Join(root, "envB")
	user := filepath.Join(root, "user")
	system := filepath.Join(root, "system")
	writeFolder(t, filepath.Join(envB, "claude"), `command = "from-envB"`, nil)
	writeFolder(t, filepath.Join(user, "claude"), `command = "from-user"`, nil)
	writeFolder(t, filepath.Join(user, "pi"), `command = "pi-user"`, nil)
	writeFolder(t, filepath.Join(system, "pi"), `command = "pi-system"`, nil)
	writeFolder(t, filepath.Join(system, "codex"), `command = "codex-system"`, nil)
	l := Lookup{Path: envA + ":" + envB, UserDir: user, SystemDir: system, Workdir: filepath.Join(root, "work")}
	for name, want := range map[string]string{"claude": "from-envB", "pi": "pi-user", "codex": "codex-system", "gemini": "gemini"} {
		f, _, err := Find(name, l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Config.Command != want {
			t.Errorf("%s: command %q, want %q (from %s)", name, f.Config.Command, want, f.Source)
		}
	}
	if _, _, err := Find("missing", l); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing agent: %v", err)
	}
}

func TestFindRefusesWorkdirAndRelative(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	writeFolder(t, filepath.Join(work, "agents", "evil"), `command = "sh"`, nil)
	// A lookup directory inside the workdir is never trusted by name.
	_, _, err := Find("evil", Lookup{Path: filepath.Join(work, "agents"), Workdir: work})
	if err == nil || !strings.Contains(err.Error(), "inside the working directory") {
		t.Fatalf("err = %v", err)
	}
	// A relative AGENT_SANDBOX_PATH entry is refused.
	_, _, err = Find("evil", Lookup{Path: "agents", Workdir: work})
	if err == nil || !strings.Contains(err.Error(), "is relative") {
		t.Fatalf("err = %v", err)
	}
	// An explicit path is allowed, with a warning.
	f, warn, err := Find(filepath.Join(work, "agents", "evil"), Lookup{Workdir: work})
	if err != nil || f.Source != FromPath || !strings.Contains(warn, "can change its own policy") {
		t.Fatalf("explicit path: %v %q %v", f, warn, err)
	}
}

func TestLoadDirErrors(t *testing.T) {
	root := t.TempDir()
	if _, err := LoadDir(filepath.Join(root, "nofolder"), FromPath); err == nil {
		t.Error("missing folder accepted")
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	if _, err := LoadDir(empty, FromPath); err == nil || !strings.Contains(err.Error(), "agent.toml: missing") {
		t.Errorf("folder without agent.toml: %v", err)
	}
	bad := writeFolder(t, filepath.Join(root, "Bad"), `command = "x"`, nil)
	if _, err := LoadDir(bad, FromPath); err == nil || !strings.Contains(err.Error(), "agent id") {
		t.Errorf("bad id: %v", err)
	}
	broken := writeFolder(t, filepath.Join(root, "broken"), `command = "x"`, map[string]string{"sandbox/nono.json": `{"nope": 1}`})
	if _, err := LoadDir(broken, FromPath); err == nil || !strings.Contains(err.Error(), filepath.Join(broken, "sandbox/nono.json")) {
		t.Errorf("broken nono.json: %v", err)
	}
}

// TestLoadBuiltinUnknown: an unknown name is ErrNoBuiltin (Find then says
// "not found"); any other LoadBuiltin error reaches Find's caller.
func TestLoadBuiltinUnknown(t *testing.T) {
	if _, err := LoadBuiltin("no-such-agent"); !errors.Is(err, ErrNoBuiltin) {
		t.Errorf("LoadBuiltin(unknown) = %v, want ErrNoBuiltin", err)
	}
	for _, name := range BuiltinNames() {
		if _, err := LoadBuiltin(name); err != nil {
			t.Errorf("built-in %s: %v", name, err)
		}
	}
}

func TestForCommand(t *testing.T) {
	f, err := ForCommand("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	shell, err := LoadBuiltin("shell")
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != CommandID || f.Config.Command != "/bin/echo" || len(f.Config.Args) != 0 || !f.Builtin() {
		t.Errorf("ForCommand = %+v, config %+v", f, f.Config)
	}
	if f.Nono == nil || !f.Nono.Network.Block || f.Nono.Path != shell.Nono.Path {
		// The shell agent's policy file, unchanged: offline.
		t.Errorf("ForCommand does not carry the shell agent's offline policy: %+v", f.Nono)
	}
	if shell.Config.Command != "$SHELL" {
		t.Errorf("ForCommand changed the shell agent's own config: %+v", shell.Config)
	}
	for _, bad := range []string{"", " ", "a\nb", "~/bin/x"} {
		if _, err := ForCommand(bad); err == nil {
			t.Errorf("ForCommand(%q) accepted", bad)
		}
	}
}

func TestFilesAndCopy(t *testing.T) {
	f, err := LoadBuiltin("claude")
	if err != nil {
		t.Fatal(err)
	}
	files, err := f.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 || files[0].Rel != "agent.toml" || files[1].Rel != "sandbox/nono.json" {
		t.Fatalf("Files() = %v", files)
	}
	dir := filepath.Join(t.TempDir(), "agents", "claude")
	if err := f.CopyTo(dir); err != nil {
		t.Fatal(err)
	}
	copied, err := LoadDir(dir, FromUserConf)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Config.Command != f.Config.Command || copied.Nono == nil || len(copied.Nono.Network.AllowDomain) != len(f.Nono.Network.AllowDomain) {
		t.Errorf("the copy differs: %+v", copied.Config)
	}
	if err := f.CopyTo(dir); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second copy over the first: %v", err)
	}
	if err := f.CopyTo(filepath.Join(t.TempDir(), "Bad Name")); err == nil {
		t.Error("a copy to a folder whose name is not an agent id was accepted")
	}
	again, err := copied.Files()
	if err != nil || len(again) != len(files) || string(again[0].Data) != string(files[0].Data) {
		t.Errorf("Files() of the copy = %v, %v", again, err)
	}
}

func TestNotInstalled(t *testing.T) {
	claude, err := LoadBuiltin("claude")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claude.NotInstalled("claude"), "claude is not installed: \"claude\" is not on PATH (Claude Code (Anthropic)); install it with `npm install -g @anthropic-ai/claude-code`, then run agent-sandbox claude again"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	run, _ := ForCommand("nosuch")
	if got, want := run.NotInstalled("nosuch"), `run: command "nosuch" not found on PATH`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The Nix profiles (nix/profiles/<agent>) carry the same code_paths and
// code_keys as the built-in folder of the same agent: what an agent's next
// start runs from its own config does not depend on how it was installed.
func TestNixProfilesCodeMatchBuiltins(t *testing.T) {
	for _, name := range []string{"claude", "pi", "codex"} {
		b, err := builtinFS.ReadFile("builtin/" + name + "/agent.toml")
		if err != nil {
			t.Fatal(err)
		}
		built, err := ParseConfig(name, b)
		if err != nil {
			t.Fatal(err)
		}
		nb, err := os.ReadFile(filepath.Join("..", "..", "nix", "profiles", name, "agent.toml"))
		if err != nil {
			t.Fatal(err)
		}
		nix, err := ParseConfig(name, bytes.ReplaceAll(nb, []byte("\"@"), []byte("\"/nix/store/x/bin/")))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(built.CodePaths, nix.CodePaths) || !reflect.DeepEqual(built.CodeKeys, nix.CodeKeys) || !reflect.DeepEqual(built.Credentials, nix.Credentials) || !reflect.DeepEqual(built.ExpectedRefusals, nix.ExpectedRefusals) {
			t.Errorf("%s: nix/profiles code settings differ from the built-in's:\n%+v %+v\n%+v %+v", name, nix.CodePaths, nix.CodeKeys, built.CodePaths, built.CodeKeys)
		}
		if len(built.CodeKeys) == 0 {
			t.Errorf("%s: the built-in folder names no code_keys", name)
		}
	}
}
