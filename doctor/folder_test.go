package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const stale = "/nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gone/bin/git"

// fixture is a throwaway home and an agent folder built by the test.
type fixture struct {
	t      *testing.T
	home   string
	folder string
	env    map[string]string
	// store is the root the store checks look /nix/store paths up under
	// (an empty store of its own, so no test depends on the host's).
	store string
}

func newFixture(t *testing.T, id string, files map[string]string) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, home: filepath.Join(root, "home"), folder: filepath.Join(root, "agents", id), store: filepath.Join(root, "store-root")}
	f.env = map[string]string{"HOME": f.home, "PATH": "/usr/bin:/bin"}
	if err := os.MkdirAll(f.home, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		writeFile(t, filepath.Join(f.folder, rel), content, 0o644)
	}
	return f
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) options(foldersOnly bool) Options {
	return Options{
		Agents:      []string{f.folder},
		FoldersOnly: foldersOnly,
		Getenv:      func(k string) string { return f.env[k] },
		LookPath:    lookPathOnly(nil),
		Workdir:     f.home,
	}
}

// folders runs only the folder checks (no host probes, no launcher check).
func (f *fixture) folders(foldersOnly bool) []Result {
	f.t.Helper()
	r := newRun(f.options(foldersOnly))
	r.storeFS = f.store
	if !r.setHome() {
		f.t.Fatalf("setHome: %+v", r.results)
	}
	for _, t := range r.targets() {
		r.folder(t)
	}
	r.missingCredentials()
	for _, res := range r.results {
		wellFormed(f.t, res)
	}
	return r.results
}

// only returns the results of one check, and fails unless each has status want
// and mentions every substring.
func only(t *testing.T, rs []Result, check string, want Status, substrings ...string) []Result {
	t.Helper()
	var out []Result
	for _, res := range rs {
		if res.Check == check {
			out = append(out, res)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %q result in %+v", check, rs)
	}
	for _, res := range out {
		if res.Status != want {
			t.Errorf("%s: status %s, want %s: %+v", check, res.Status, want, res)
		}
	}
	joined := ""
	for _, res := range out {
		joined += res.Detail + "\n"
	}
	for _, s := range substrings {
		if !strings.Contains(joined, s) {
			t.Errorf("%s: %q not in %q", check, s, joined)
		}
	}
	return out
}

func none(t *testing.T, rs []Result, check string) {
	t.Helper()
	for _, res := range rs {
		if res.Check == check {
			t.Errorf("unexpected %+v", res)
		}
	}
}

func TestFolderLoads(t *testing.T) {
	f := newFixture(t, "good", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\n",
		"sandbox/nono.json": "{}",
	})
	rs := f.folders(true)
	only(t, rs, "good folder", OK, f.folder+" (path argument): agent.toml, sandbox/nono.json parse, every key known")
	none(t, rs, "good keys")
	for _, res := range rs {
		if res.Status != OK {
			t.Errorf("not ok: %+v", res)
		}
	}
}

func TestFolderUnknownKeyFails(t *testing.T) {
	f := newFixture(t, "bad", map[string]string{"agent.toml": "command = \"/bin/sh\"\ncolour = \"blue\"\n"})
	only(t, f.folders(true), "bad folder", Fail, filepath.Join(f.folder, "agent.toml")+": colour: unknown key")

	f = newFixture(t, "badjson", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\n",
		"sandbox/nono.json": "{\"network\": {\"blok\": true}}",
	})
	only(t, f.folders(true), "badjson folder", Fail, filepath.Join(f.folder, "sandbox/nono.json")+":1:14: network.blok: unknown key")
}

func TestKeysSbxWarning(t *testing.T) {
	f := newFixture(t, "ported", map[string]string{
		"agent.toml":       "command = \"/bin/sh\"\n",
		"sandbox/sbx.json": "{\"colour\": \"blue\", \"network\": {\"open_port\": [8080]}}",
	})
	rs := f.folders(true)
	keys := only(t, rs, "ported keys", Warn, `unsupported key "colour" ignored`, "network.open_port is nono-only")
	if len(keys) != 2 || !strings.Contains(keys[0].Fix+keys[1].Fix, "sandbox/nono.json") {
		t.Errorf("keys: %+v", keys)
	}
	only(t, rs, "ported folder", OK, "parse")
	if d := only(t, rs, "ported folder", OK)[0].Detail; strings.Contains(d, "every key known") {
		t.Errorf("folder claims every key known: %q", d)
	}
}

func TestGrants(t *testing.T) {
	f := newFixture(t, "wide", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\n",
		"sandbox/nono.json": "{\"filesystem\": {\"allow\": [\"~\"]}}",
		"sandbox/sbx.json":  "{\"filesystem\": {\"read\": [\"~/.ssh\"]}}",
	})
	rs := f.folders(true)
	only(t, rs, "wide grants (nono.json)", Fail, filepath.Join(f.folder, "sandbox/nono.json")+`: filesystem.allow[0]: "~" grants your whole home directory`)
	only(t, rs, "wide grants (sbx.json)", Fail, filepath.Join(f.folder, "sandbox/sbx.json")+`: filesystem.read[0]: "~/.ssh" lies inside the credential path`)

	f = newFixture(t, "narrow", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\nconfig_paths = [\"~/.narrow\"]\n",
		"sandbox/nono.json": "{\"filesystem\": {\"read\": [\"/usr/share\"]}}",
	})
	only(t, f.folders(true), "narrow grants (nono.json)", OK, "legal under nono")

	// A folder with neither file is checked as --sandbox would run it.
	f = newFixture(t, "bare", map[string]string{"agent.toml": "command = \"/bin/sh\"\nconfig_paths = [\"~/.config\"]\n"})
	only(t, f.folders(true), "bare grants (agent.toml)", Fail, `config_paths[0]: "~/.config" contains the credential path`)
}

func TestCommand(t *testing.T) {
	f := newFixture(t, "absent", map[string]string{"agent.toml": "command = \"no-such-agent-cli\"\n"})
	rs := f.folders(true)
	only(t, rs, "absent command", Warn, filepath.Join(f.folder, "agent.toml")+`: command = "no-such-agent-cli": not on PATH: not installed`)
	none(t, rs, "absent closure")

	f = newFixture(t, "present", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	only(t, f.folders(true), "present command", OK, "/bin/sh")
}

func needGCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found in PATH; the closure fixture compiles a program with gcc")
	}
}

func gcc(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// brokenProgram builds a program linked against a library that is then
// deleted, and returns the program's path.
func brokenProgram(t *testing.T) string {
	t.Helper()
	needGCC(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "lib.c"), "int doctor_gone(void) { return 0; }\n", 0o644)
	writeFile(t, filepath.Join(dir, "main.c"), "int doctor_gone(void);\nint main(void) { return doctor_gone(); }\n", 0o644)
	lib := filepath.Join(dir, "lib", "libdoctorgone.so")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	gcc(t, "-shared", "-fPIC", "-o", lib, filepath.Join(dir, "lib.c"))
	prog := filepath.Join(dir, "bin", "broken")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	gcc(t, "-o", prog, filepath.Join(dir, "main.c"), "-L"+filepath.Dir(lib), "-ldoctorgone", "-Wl,-rpath,"+filepath.Dir(lib))
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestClosure(t *testing.T) {
	prog := brokenProgram(t)
	f := newFixture(t, "broken", map[string]string{"agent.toml": "command = \"" + prog + "\"\n"})
	only(t, f.folders(true), "broken closure", Fail, `command = "`+prog+`": `+prog+" needs libdoctorgone.so, which is missing")

	// The same program as an exec_paths entry.
	f = newFixture(t, "tool", map[string]string{"agent.toml": "command = \"/bin/sh\"\nexec_paths = [\"" + prog + "\"]\n"})
	rs := f.folders(true)
	only(t, rs, "tool closure", Fail, `exec_paths[0] = "`+prog+`": `+prog+" needs libdoctorgone.so")
	only(t, rs, "tool exec_paths", OK, "1 entries exist and are executable")

	f = newFixture(t, "fine", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	only(t, f.folders(true), "fine closure", OK, "1 program(s) resolve completely")
}

func TestExecPaths(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	writeFile(t, plain, "#!/bin/sh\n", 0o644)
	tool := filepath.Join(dir, "tool")
	writeFile(t, tool, "#!/bin/sh\n", 0o755)

	f := newFixture(t, "paths", map[string]string{"agent.toml": `command = "/bin/sh"
exec_paths = ["` + stale + `", "` + plain + `", "` + dir + `", "` + tool + `", "/no/such/tool"]
`})
	rs := f.folders(true)
	toml := filepath.Join(f.folder, "agent.toml")
	bad := only(t, rs, "paths exec_paths", Fail,
		toml+`: exec_paths[0] = "`+stale+`" does not exist: store path /nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gone is stale`,
		toml+`: exec_paths[1] = "`+plain+`" is not executable (mode 0644)`,
		toml+`: exec_paths[2] = "`+dir+`" is a directory`,
		toml+`: exec_paths[4] = "/no/such/tool" does not exist`)
	if len(bad) != 4 {
		t.Errorf("want 4 failures (the executable entry passes): %+v", bad)
	}
	if !strings.Contains(bad[0].Fix, "re-render") || !strings.Contains(bad[1].Fix, "chmod +x") {
		t.Errorf("fixes: %q, %q", bad[0].Fix, bad[1].Fix)
	}

	f = newFixture(t, "tools", map[string]string{"agent.toml": "command = \"/bin/sh\"\nexec_paths = [\"" + tool + "\", \"/bin/sh\"]\n"})
	only(t, f.folders(true), "tools exec_paths", OK, "2 entries exist and are executable")
}

func TestStorePaths(t *testing.T) {
	f := newFixture(t, "stale", map[string]string{
		"agent.toml": `# git comes from /nix/store/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-git-2.40/bin
command = "/bin/sh"
exec_paths = ["` + stale + `"]

[set_env]
GIT = "` + stale + `"
`,
		"sandbox/nono.json": `{
  // the old git
  "filesystem": {"read": ["` + filepath.Dir(filepath.Dir(stale)) + `"]},
}`,
	})
	rs := f.folders(true)
	toml := filepath.Join(f.folder, "agent.toml")
	nonoJSON := filepath.Join(f.folder, "sandbox/nono.json")
	bad := only(t, rs, "stale store paths", Fail,
		toml+`:3: exec_paths[0], set_env.GIT = "`+stale+`": store path /nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gone does not exist: a stale store path`,
		toml+`:1: /nix/store/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-git-2.40/bin (outside any value, e.g. in a comment): store path /nix/store/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-git-2.40 does not exist`,
		nonoJSON+`:3: filesystem.read[0] = "/nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gone": store path /nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gone does not exist`,
		// set_env reaches the generated profile's set_vars.
		`generated nono profile: environment.set_vars.GIT = "`+stale+`": store path`)
	if len(bad) != 4 || !strings.Contains(bad[0].Fix, "rebuild / re-render the folder") {
		t.Errorf("%+v", bad)
	}
	// The grant of a missing path is legal; only the store check fails it.
	only(t, rs, "stale grants (nono.json)", OK)

	f = newFixture(t, "clean", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	only(t, f.folders(true), "clean store paths", OK, "no /nix/store paths")
}

// Store paths that exist pass, each counted once however many times the
// folder and the generated profile name it (the store is built under the
// fixture's own root, so the host's /nix/store does not matter).
func TestStorePathPresent(t *testing.T) {
	pkg := "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-tool-1.0"
	lib := "/nix/store/zyxwvsrqpnmlkjihgfdcba9876543210-lib-2.0"
	f := newFixture(t, "current", map[string]string{"agent.toml": `# tool from ` + pkg + `/bin
command = "/bin/sh"
read_paths = ["` + pkg + `", "` + lib + `/lib"]

[set_env]
TOOL = "` + pkg + `/bin/tool"
`})
	for _, p := range []string{pkg + "/bin/tool", lib + "/lib/libx.so"} {
		writeFile(t, filepath.Join(f.store, p), "x\n", 0o755)
	}
	// pkg, pkg/bin, pkg/bin/tool and lib/lib: four distinct paths, named
	// seven times across agent.toml and the generated profile.
	only(t, f.folders(true), "current store paths", OK, "all 4 /nix/store paths exist")

	// The same folder against an empty store fails on each path.
	f.store = t.TempDir()
	if bad := only(t, f.folders(true), "current store paths", Fail); len(bad) == 0 {
		t.Error("an empty store passed")
	}
}

// A profile an earlier run left in the state dir is only a warning.
func TestStorePathsOldProfile(t *testing.T) {
	f := newFixture(t, "old", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	prof := filepath.Join(f.home, ".local/state/agent-sandbox/agents/old/nono-profile.json")
	writeFile(t, prof, "{\n  \"filesystem\": {\"read\": [\""+stale+"\"]}\n}\n", 0o644)
	rs := f.folders(false)
	only(t, rs, "old store paths", Warn, prof+`:2: filesystem.read[0] = "`+stale+`": store path`)
	// With --folders-only the state dir is not read.
	only(t, f.folders(true), "old store paths", OK, "no /nix/store paths")
}

func TestFindStorePaths(t *testing.T) {
	raw := []byte(`{
  "a": ["/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x/bin/y", "/usr/bin"],
  // /nix/store/0123456789abcdfghijklmnpqrsvwxyz-x/bin/y
  "b": {"c": "PATH=/nix/store/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-q:/bin"},
  "e": "/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee-not-nixbase32"
}`)
	refs := findStorePaths(raw, jsonStrings(raw, true))
	if len(refs) != 2 {
		t.Fatalf("%+v", refs)
	}
	if r := refs[0]; r.path != "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x/bin/y" || strings.Join(r.keys, ",") != "a[0]" || len(r.lines) != 2 || r.lines[0] != 2 || r.lines[1] != 3 {
		t.Errorf("%+v", r)
	}
	if r := refs[1]; r.path != "/nix/store/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-q" || strings.Join(r.keys, ",") != "b.c" || r.value != "PATH=/nix/store/zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-q:/bin" {
		t.Errorf("%+v", r)
	}
	toml := []byte("command = \"/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x/bin/y\"\n[sbx]\nversion_command = [\"/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x/bin/y\", \"--version\"]\n")
	refs = findStorePaths(toml, tomlStrings(toml))
	if len(refs) != 1 || strings.Join(refs[0].keys, ",") != "command,sbx.version_command[0]" || len(refs[0].lines) != 2 {
		t.Errorf("%+v", refs)
	}
}

func TestPosture(t *testing.T) {
	// An sbx-only folder on a host without sbx: a plain run is refused, and
	// the agent is installed, so that fails.
	f := newFixture(t, "viasbx", map[string]string{"agent.toml": "command = \"/bin/sh\"\n", "sandbox/sbx.json": "{}"})
	only(t, f.folders(false), "viasbx posture", Fail, "a plain run of viasbx is refused: sbx (Docker Sandboxes) is not installed")
	// Not installed: a warning.
	f = newFixture(t, "viasbx", map[string]string{"agent.toml": "command = \"no-such-agent-cli\"\n", "sandbox/sbx.json": "{}"})
	only(t, f.folders(false), "viasbx posture", Warn, "not installed here, hence only a warning")
	// Opted out: a warning naming the file.
	f = newFixture(t, "optout", map[string]string{"agent.toml": "command = \"/bin/sh\"\n", "sandbox/nono.json": "{\"sandbox\": false}"})
	res := only(t, f.folders(false), "optout posture", Warn, "unsandboxed: SANDBOX DISABLED: "+filepath.Join(f.folder, "sandbox/nono.json"))
	if !strings.Contains(res[0].Fix, "remove {\"sandbox\": false}") {
		t.Errorf("fix: %q", res[0].Fix)
	}
	// A posture the host can run.
	f = newFixture(t, "runs", map[string]string{"agent.toml": "command = \"/bin/sh\"\n", "sandbox/nono.json": "{\"network\": {\"block\": true}}"})
	nono := fakeProgram(t, "nono", "exit 99\n")
	o := f.options(false)
	o.LookPath = lookPathOnly(map[string]string{"nono": nono})
	r := newRun(o)
	r.setHome()
	for _, tg := range r.targets() {
		r.folder(tg)
	}
	// It names the engine, and an engine weaker than the view (nono
	// alone) is a warning that says what it lacks.
	want := OK
	for _, res := range r.results {
		if res.Check == "runs posture" && strings.Contains(res.Detail, "engine: nono alone") {
			want = Warn
		}
	}
	res = only(t, r.results, "runs posture", want, "nono (folder nono.json), network blocked; engine: nono")
	if want == Warn && (!strings.Contains(res[0].Detail, "NOT: host processes invisible") || !strings.Contains(res[0].Fix, "user namespaces")) {
		t.Errorf("nono alone: the lacks or the fix missing: %+v", res[0])
	}
	// --folders-only has no posture check.
	none(t, f.folders(true), "runs posture")

	// A refusal the grants check reported is not repeated.
	f = newFixture(t, "wide", map[string]string{"agent.toml": "command = \"/bin/sh\"\n", "sandbox/nono.json": "{\"filesystem\": {\"read\": [\"~\"]}}"})
	rs := f.folders(false)
	only(t, rs, "wide grants (nono.json)", Fail, `filesystem.read[0]: "~" grants your whole home directory`)
	none(t, rs, "wide posture")
}

func TestLocationWarning(t *testing.T) {
	f := newFixture(t, "inside", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	o := f.options(false)
	o.Workdir = filepath.Dir(f.folder)
	r := newRun(o)
	r.setHome()
	for _, tg := range r.targets() {
		r.folder(tg)
	}
	only(t, r.results, "inside location", Warn, "is inside the working directory")
	none(t, f.folders(false), "inside location")
}

// With --folders-only an unset HOME is replaced, and folders still load.
func TestFoldersOnlyWithoutHome(t *testing.T) {
	f := newFixture(t, "nohome", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\nconfig_paths = [\"~/.nohome\"]\n",
		"sandbox/nono.json": "{}",
	})
	delete(f.env, "HOME")
	rs := Run(f.options(true))
	for _, res := range rs {
		wellFormed(t, res)
		if res.Status != OK {
			t.Errorf("%+v", res)
		}
		if strings.HasPrefix(res.Check, "launcher") || res.Check == "landlock" {
			t.Errorf("--folders-only ran %q", res.Check)
		}
	}
	// Without --folders-only a missing HOME fails.
	rs = Run(Options{Getenv: func(string) string { return "" }, LookPath: lookPathOnly(nil), Agents: []string{f.folder}, ProbeTimeout: 1})
	if last := rs[len(rs)-1]; last.Check != "home" || last.Status != Fail {
		t.Errorf("%+v", last)
	}
}

// TestCredentials: doctor says which [[credentials]] sources have a value
// (the broker injects those) and warns, naming the file and key, of those
// that have none; a command source is not run.
func TestCredentials(t *testing.T) {
	f := newFixture(t, "keyed", map[string]string{"agent.toml": `command = "/bin/sh"

[[credentials]]
env = "SET_KEY"
base_url_env = "SET_BASE"
upstream = "https://api.example.com"
header = "x-api-key"

[[credentials]]
env = "UNSET_KEY"
base_url_env = "UNSET_BASE"
upstream = "https://api.example.com"
header = "x-api-key"

[[credentials]]
env = "CMD_KEY"
base_url_env = "CMD_BASE"
upstream = "https://api.example.com"
header = "authorization"
source = "command:touch /nonexistent-dir/ran"
`})
	f.env["SET_KEY"] = "sk-x"
	rs := f.folders(false)
	var got []string
	for _, r := range rs {
		if r.Check == "keyed credentials" || r.Check == "credentials" {
			got = append(got, string(r.Status)+": "+r.Detail)
		}
	}
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, "warn: no value for UNSET_KEY (source env:UNSET_KEY: not set; named by keyed);") ||
		!strings.Contains(joined, "ok: injected by the broker") || !strings.Contains(joined, "SET_KEY (source env:SET_KEY)") ||
		!strings.Contains(joined, "CMD_KEY (source command:touch /nonexistent-dir/ran: run when a run starts, not by doctor)") {
		t.Errorf("doctor's credentials checks:\n%s", joined)
	}

	// Under an engine without the broker's routes (nono alone, with nono
	// on PATH) the line says the key is not kept out, never "phantom".
	g := newFixture(t, "nonokeyed", map[string]string{"agent.toml": "command = \"/bin/sh\"\n[[credentials]]\nenv = \"SET_KEY\"\nbase_url_env = \"SET_BASE\"\nupstream = \"https://api.example.com\"\nheader = \"x-api-key\"\n",
		"sandbox/nono.json": `{"network": {"allow_domain": ["api.example.com"]}}`})
	g.env["SET_KEY"] = "sk-x"
	o := g.options(false)
	o.LookPath = lookPathOnly(map[string]string{"nono": fakeProgram(t, "nono", "exit 99\n")})
	r := newRun(o)
	r.setHome()
	for _, tg := range r.targets() {
		r.folder(tg)
	}
	for _, res := range r.results {
		if res.Check == "nonokeyed posture" && strings.Contains(res.Detail, "engine: nono alone") {
			only(t, r.results, "nonokeyed credentials", Warn, "a plain run uses engine nono alone, without the broker's credential routes (nono has no route")
		}
	}
}
