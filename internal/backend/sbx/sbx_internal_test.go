package sbx

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// fixture is a spec whose paths exist under a temporary root.
func fixture(t *testing.T, id string) spec.Spec {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	s := spec.Spec{
		AgentID:  id,
		AgentDir: filepath.Join(root, "agents", id),
		Workdir:  filepath.Join(root, "proj"),
		StateDir: filepath.Join(home, ".local/state/agent-sandbox/agents", id),
		Home:     home,
		Argv:     []string{"/usr/bin/" + id, "--flag"},
		Network:  posture.Network{Mode: posture.NetOpen},
	}
	for _, d := range []string{s.AgentDir, s.Workdir, s.StateDir} {
		mkdir(t, d)
	}
	s.Read = []string{s.AgentDir}
	s.Allow = append([]string{s.Workdir}, s.AgentStateDirs()...)
	return s
}

// TestWriteOnlyRefused: sbx has no write-only mount; a write grant is
// refused, naming the file, the key and the path, never mounted read-write.
func TestWriteOnlyRefused(t *testing.T) {
	s := fixture(t, "a")
	wo := filepath.Dir(s.Workdir) + "/wo"
	mkdir(t, wo)
	s.Write = []string{wo}
	p, err := Prepare(s, Options{Path: "/usr/bin/sbx", PolicyFile: "/agents/a/sandbox/sbx.json"})
	if err == nil {
		t.Fatalf("write-only grant %s accepted; mounts %q", wo, p.Mounts)
	}
	for _, want := range []string{"/agents/a/sandbox/sbx.json", "filesystem.write", wo} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if got := Mounts(s, Options{}); contains(got, wo) {
		t.Errorf("write-only %s mounted read-write: %q", wo, got)
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestMountsAccessAndDedupe(t *testing.T) {
	s := fixture(t, "a")
	root := filepath.Dir(s.Workdir)
	data, scratch, both, wo := root+"/data", root+"/scratch", root+"/both", root+"/wo"
	cfg := s.Home + "/.a"
	s.ConfigPaths = []string{cfg}
	s.Read = append(s.Read, data, both)
	s.Allow = append(s.Allow, scratch, both, cfg)
	s.Write = []string{wo}
	s.GitDirs = []string{root + "/main/.git/worktrees/x"}
	got := Mounts(s, Options{})
	want := []string{
		s.AgentDir + ":ro", both, data + ":ro", s.GitDirs[0], s.MiseCacheDir(), s.TempDir(), cfg, s.Workdir, scratch,
	}
	wantSorted := uniq.Sorted(want)
	if !reflect.DeepEqual(got, wantSorted) {
		t.Errorf("Mounts:\n got %q\nwant %q", got, wantSorted)
	}
	for _, m := range got {
		if m == both+":ro" {
			t.Errorf("%s is granted read-write too: it must be mounted read-write only", both)
		}
	}
}

func TestMountHashSerialisation(t *testing.T) {
	// The documented serialisation: sorted, de-duplicated arguments joined
	// by "\n", no trailing newline; sha256; first 8 hex digits.
	list := []string{"/w", "/a:ro", "/w", "/s"}
	sum := sha256.Sum256([]byte("/a:ro\n/s\n/w"))
	want := hex.EncodeToString(sum[:])[:8]
	if got := MountHash(list); got != want {
		t.Errorf("MountHash = %s, want %s", got, want)
	}
	if got := Name("pi", list); got != "agent-sandbox-pi-"+want {
		t.Errorf("Name = %s", got)
	}
}

func TestNameOrderInsensitive(t *testing.T) {
	a := []string{"/proj", "/home/u/.pi/agent", "/agents/pi:ro", "/data:ro"}
	b := []string{"/data:ro", "/agents/pi:ro", "/proj", "/home/u/.pi/agent", "/proj"}
	if Name("pi", a) != Name("pi", b) {
		t.Errorf("the name depends on the order of the mounts: %s vs %s", Name("pi", a), Name("pi", b))
	}
	// And through Mounts: grants listed in another order give the same name.
	s := fixture(t, "x")
	root := filepath.Dir(s.Workdir)
	mkdir(t, root+"/d1")
	mkdir(t, root+"/d2")
	s1, s2 := s, s
	s1.Read = append(append([]string{}, s.Read...), root+"/d1", root+"/d2")
	s2.Read = append([]string{root + "/d2", root + "/d1"}, s.Read...)
	p1, _ := Prepare(s1, Options{Path: "/bin/sbx"})
	p2, _ := Prepare(s2, Options{Path: "/bin/sbx"})
	if p1.Name != p2.Name {
		t.Errorf("grant order changed the name: %s vs %s", p1.Name, p2.Name)
	}
}

func TestNameGrantSensitive(t *testing.T) {
	base := []string{"/proj", "/agents/pi:ro"}
	n := Name("pi", base)
	for _, changed := range [][]string{
		{"/proj", "/agents/pi:ro", "/data:ro"}, // a read grant added
		{"/proj", "/agents/pi"},                // ro became rw
		{"/proj2", "/agents/pi:ro"},            // another workdir
		{"/proj"},                              // a mount dropped
	} {
		if Name("pi", changed) == n {
			t.Errorf("%q gets the same name as %q", changed, base)
		}
	}
	if Name("pi", base) == Name("claude", base) {
		t.Error("the agent id is not part of the name")
	}
}

var sbxNameChars = regexp.MustCompile(`^[A-Za-z0-9.+-]+$`)

func TestNameUnderscoreMapped(t *testing.T) {
	a := fixture(t, "my_agent")
	pa, err := Prepare(a, Options{Path: "/bin/sbx"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pa.Name, "agent-sandbox-my-agent-") || !sbxNameChars.MatchString(pa.Name) {
		t.Errorf("name %q: want agent-sandbox-my-agent-<hash8> in sbx's charset", pa.Name)
	}
	if !ValidName(pa.Name) {
		t.Errorf("ValidName(%q) = false", pa.Name)
	}
	// my_agent and my-agent map to the same prefix but have their own
	// state dirs, so their names differ.
	b := a
	b.AgentID = "my-agent"
	b.StateDir = filepath.Join(filepath.Dir(a.StateDir), "my-agent")
	b.Allow = []string{a.Workdir, b.StateDir}
	mkdir(t, b.StateDir)
	pb, _ := Prepare(b, Options{Path: "/bin/sbx"})
	if pa.Name == pb.Name {
		t.Errorf("my_agent and my-agent share sandbox %s", pa.Name)
	}
}

func TestAllowResources(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"api.example.com", "api.example.com,*.api.example.com"},
		{"api.example.com:443", "api.example.com:443,*.api.example.com:443"},
		{"API.Example.COM.", "api.example.com,*.api.example.com"},
		{"10.0.0.1", "10.0.0.1"},
		{"10.0.0.1:8080", "10.0.0.1:8080"},
		{"*.example.com", "*.example.com"},
		{"localhost", "host.docker.internal"},
		{"127.0.0.1", "host.docker.internal"},
		{"localhost:11434", "host.docker.internal:11434"},
		{"127.0.0.1:11434", "host.docker.internal:11434"},
		{"host.docker.internal:8080", "host.docker.internal:8080"},
		{"999.1.1.1", "999.1.1.1,*.999.1.1.1"},
	} {
		if got := AllowResources([]string{c.in}); got != c.want {
			t.Errorf("AllowResources(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := AllowResources([]string{"a.com", "localhost", "127.0.0.1", "a.com", "1.2.3.4"})
	if want := "a.com,*.a.com,host.docker.internal,1.2.3.4"; got != want {
		t.Errorf("list: got %q, want %q (localhost and 127.0.0.1 collapse into one host.docker.internal)", got, want)
	}
}

func TestNetworkRule(t *testing.T) {
	if r := NetworkRule(posture.Network{Mode: posture.NetOpen}); r != nil {
		t.Errorf("open: %+v, want no rule", r)
	}
	r := NetworkRule(posture.Network{Mode: posture.NetBlocked})
	if r == nil || r.Decision != "deny" || r.Resources != "**" {
		t.Errorf("blocked: %+v", r)
	}
	r = NetworkRule(posture.Network{Mode: posture.NetAllowlist, AllowDomains: []string{"a.com", "localhost:1"}})
	if r == nil || r.Decision != "allow" || r.Resources != "a.com,*.a.com,host.docker.internal:1" {
		t.Errorf("allowlist: %+v", r)
	}
	if got := r.Argv("/bin/sbx", "N"); !reflect.DeepEqual(got, []string{"/bin/sbx", "policy", "allow", "network", "--sandbox", "N", "a.com,*.a.com,host.docker.internal:1"}) {
		t.Errorf("argv %q", got)
	}
	// An allowlist with nothing in it is not left open.
	r = NetworkRule(posture.Network{Mode: posture.NetAllowlist})
	if r == nil || r.Decision != "deny" {
		t.Errorf("empty allowlist: %+v, want deny '**'", r)
	}
}

func TestRewriteLoopback(t *testing.T) {
	for _, c := range []struct {
		in, want string
		changed  bool
	}{
		{"http://localhost:11434", "http://host.docker.internal:11434", true},
		{"http://localhost:11434/v1?x=1", "http://host.docker.internal:11434/v1?x=1", true},
		{"https://127.0.0.1/v1", "https://host.docker.internal/v1", true},
		{"http://127.1.2.3:8080", "http://host.docker.internal:8080", true},
		{"http://[::1]:8080/", "http://host.docker.internal:8080/", true},
		{"http://0.0.0.0:1234", "http://host.docker.internal:1234", true},
		{"localhost:11434", "host.docker.internal:11434", true},
		{"127.0.0.1", "host.docker.internal", true},
		{"http://LOCALHOST:1", "http://host.docker.internal:1", true},
		{"https://api.anthropic.com", "https://api.anthropic.com", false},
		{"http://localhost.example.com:1", "http://localhost.example.com:1", false},
		{"http://mylocalhost:1", "http://mylocalhost:1", false},
		{"", "", false},
	} {
		got, changed := RewriteLoopback(c.in)
		if got != c.want || changed != c.changed {
			t.Errorf("RewriteLoopback(%q) = %q, %v; want %q, %v", c.in, got, changed, c.want, c.changed)
		}
	}
}

func TestGuestEnv(t *testing.T) {
	s := fixture(t, "claude")
	s.EnvPass = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HOME", "PATH"}
	s.EnvSet = map[string]string{"DISABLE_AUTOUPDATER": "1"}
	host := map[string]string{
		"ANTHROPIC_API_KEY":  "sk-secret",
		"ANTHROPIC_BASE_URL": "http://localhost:11434",
		"OLLAMA_HOST":        "127.0.0.1:11434",
		"PROXY_URL":          "http://user:pw@localhost:3128",
		"PATH":               "/usr/bin",
	}
	env, warns := guestEnv(s, Options{Home: "~", LoopbackEnv: []string{"ANTHROPIC_BASE_URL", "OLLAMA_HOST", "PROXY_URL", "UNSET_URL"}, Getenv: func(k string) string { return host[k] }})
	want := []string{
		"HOME=" + s.Home,
		"ANTHROPIC_BASE_URL=http://host.docker.internal:11434",
		"DISABLE_AUTOUPDATER=1",
		"OLLAMA_HOST=host.docker.internal:11434",
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env:\n got %q\nwant %q", env, want)
	}
	for _, e := range env {
		if strings.Contains(e, "sk-secret") || strings.Contains(e, "pw@") {
			t.Errorf("a secret reaches the guest's -e flags: %s", e)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "PROXY_URL") || !strings.Contains(warns[0], "sbx secret set") {
		t.Errorf("warnings %q: want one about PROXY_URL's credentials", warns)
	}
}

func TestGuestHome(t *testing.T) {
	s := spec.Spec{Home: "/home/u"}
	for in, want := range map[string]string{"": "/home/u", "~": "/home/u", "~/.x": "/home/u/.x", "/opt/h": "/opt/h"} {
		if got := GuestHome(s, Options{Home: in}); got != want {
			t.Errorf("GuestHome(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionToken(t *testing.T) {
	for _, c := range []struct{ stdout, stderr, want string }{
		{"2.1.197 (Claude Code)\n", "", "2.1.197"},
		{"codex-cli 0.171.0\n", "", "0.171.0"},
		{"", "0.73.1\n", "0.73.1"}, // pi prints on stderr
		{"v1.18.33\n", "", "1.18.33"},
		{"pi (1.6.0-beta.1)", "", "1.6.0-beta.1"},
		{"node 20.1 warning", "0.61.0", "0.61.0"},
		{"no version here", "error: not found", ""},
	} {
		if got := VersionToken(c.stdout, c.stderr); got != c.want {
			t.Errorf("VersionToken(%q, %q) = %q, want %q", c.stdout, c.stderr, got, c.want)
		}
	}
}

func TestPiPackageByVersion(t *testing.T) {
	for v, want := range map[string]string{
		"0.5.0": PiPackageOld, "0.73.0": PiPackageOld, "0.73.1": PiPackageOld,
		"0.74.0": PiPackageNew, "0.80.6": PiPackageNew, "1.6.0": PiPackageNew, "0.74.0-rc.1": PiPackageNew,
	} {
		if got := PiPackage(v); got != want {
			t.Errorf("PiPackage(%s) = %s, want %s", v, got, want)
		}
	}
	for _, c := range []struct{ pkg, v, want string }{
		{PiPackageOld, "0.80.6", PiPackageNew + "@0.80.6"},
		{PiPackageNew, "0.73.1", PiPackageOld + "@0.73.1"},
		{PiPackageOld, "", PiPackageOld},
		{"@anthropic-ai/claude-code", "2.1.197", "@anthropic-ai/claude-code@2.1.197"},
	} {
		if got := PinnedPackage(c.pkg, c.v); got != c.want {
			t.Errorf("PinnedPackage(%s, %s) = %s, want %s", c.pkg, c.v, got, c.want)
		}
	}
}

func TestMissingPaths(t *testing.T) {
	s := fixture(t, "claude")
	if err := os.RemoveAll(s.StateDir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(s.Workdir)
	cfgDir, cfgFile := s.Home+"/.claude", s.Home+"/.claude.json"
	s.ConfigPaths = []string{cfgDir, cfgFile}
	s.Allow = append(s.Allow, cfgDir, cfgFile, root+"/scratch")
	s.Read = append(s.Read, "/etc/claude-code-does-not-exist")
	p, err := Prepare(s, Options{Path: "/bin/sbx"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{s.MiseCacheDir(), s.TempDir(), cfgDir}; !reflect.DeepEqual(sortedCopy(p.Create), sortedCopy(want)) {
		t.Errorf("Create = %q, want %q", p.Create, want)
	}
	if contains(p.Mounts, s.StateDir) {
		t.Errorf("the state dir itself (agent-sandbox's own) is mounted: %q", p.Mounts)
	}
	for _, m := range []string{s.MiseCacheDir(), s.TempDir(), cfgDir} {
		if !contains(p.Mounts, m) {
			t.Errorf("%s is created first, so it must be mounted: %q", m, p.Mounts)
		}
	}
	for _, m := range []string{cfgFile, root + "/scratch", "/etc/claude-code-does-not-exist"} {
		if !contains(p.Skipped, m) || contains(p.Mounts, m) || contains(p.Mounts, m+":ro") {
			t.Errorf("%s does not exist: want it skipped, not mounted (mounts %q, skipped %q)", m, p.Mounts, p.Skipped)
		}
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "does not exist") && !strings.Contains(p.Warnings[0], "do not exist") {
		t.Errorf("warnings %q", p.Warnings)
	}
	// A path sbx's PATH[:ro] syntax cannot express is refused.
	bad := root + "/a:b"
	mkdir(t, bad)
	s.Read = append(s.Read, bad)
	if _, err := Prepare(s, Options{Path: "/bin/sbx"}); err == nil || !strings.Contains(err.Error(), "PATH[:ro]") {
		t.Errorf("a path with ':' was accepted: %v", err)
	}
}

func TestLooksLikeDir(t *testing.T) {
	for p, want := range map[string]bool{
		"/h/.claude": true, "/h/.pi/agent": true, "/h/.cache/claude-cli-nodejs": true,
		"/h/.claude.json": false, "/h/.config/x/settings.json": false,
	} {
		if got := looksLikeDir(p); got != want {
			t.Errorf("looksLikeDir(%s) = %v", p, got)
		}
	}
}

func TestRefusedWithoutSbx(t *testing.T) {
	p, err := Prepare(fixture(t, "a"), Options{Path: "sbx"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Refusal, "not installed") || !strings.Contains(p.Refusal, "sbx login") || !strings.Contains(p.Refusal, "sbx policy init deny-all") {
		t.Errorf("refusal %q: want it to say sbx is missing and name the setup commands", p.Refusal)
	}
	if len(p.Steps) == 0 {
		t.Error("a refused plan still prints its steps for --dry-run")
	}
}

func TestCheckHistory(t *testing.T) {
	allow := func(r string) *Rule { return &Rule{Decision: "allow", Resources: r} }
	deny := &Rule{Decision: "deny", Resources: "**"}
	rec := &Record{Allowed: []string{"*.a.com", "*.evil.com", "a.com", "evil.com"}}
	for _, c := range []struct {
		name     string
		rec      *Record
		attached bool
		mode     posture.NetMode
		rule     *Rule
		refuse   bool
		warn     bool
	}{
		{"fresh sandbox carries nothing", rec, false, posture.NetAllowlist, allow("a.com,*.a.com"), false, false},
		{"narrower allowlist than before", rec, true, posture.NetAllowlist, allow("a.com,*.a.com"), true, false},
		{"same allowlist", rec, true, posture.NetAllowlist, allow("a.com,*.a.com,evil.com,*.evil.com"), false, false},
		{"wider allowlist", &Record{Allowed: []string{"a.com"}}, true, posture.NetAllowlist, allow("a.com,b.com"), false, false},
		{"blocked beats leftovers", rec, true, posture.NetBlocked, deny, false, false},
		{"open over leftover allows", rec, true, posture.NetOpen, nil, false, false},
		{"leftover deny under open", &Record{DenyAll: true}, true, posture.NetOpen, nil, false, true},
		{"leftover deny under allowlist", &Record{DenyAll: true}, true, posture.NetAllowlist, allow("a.com"), false, true},
		{"unknown history, allowlist", nil, true, posture.NetAllowlist, allow("a.com"), true, false},
		{"unknown history, open", nil, true, posture.NetOpen, nil, false, false},
		{"unknown history, blocked", nil, true, posture.NetBlocked, deny, false, false},
		{"recorded after an unknown history, allowlist", &Record{UnknownRules: true}, true, posture.NetAllowlist, allow("a.com"), true, false},
		{"recorded after an unknown history, fresh", &Record{UnknownRules: true}, false, posture.NetAllowlist, allow("a.com"), false, false},
		// An empty allow list is deny '**': it beats whatever the sandbox
		// allowed before, like a blocked run (issue 15 item 2).
		{"empty allowlist beats leftover allows", rec, true, posture.NetAllowlist, deny, false, false},
		{"empty allowlist, unknown history", nil, true, posture.NetAllowlist, deny, false, false},
		{"empty allowlist, leftover deny", &Record{DenyAll: true}, true, posture.NetAllowlist, deny, false, false},
	} {
		refusal, warning := checkHistory(c.rec, c.attached, c.mode, c.rule, "agent-sandbox-x-00000000")
		if (refusal != "") != c.refuse || (warning != "") != c.warn {
			t.Errorf("%s: refusal %q, warning %q", c.name, refusal, warning)
		}
		if refusal != "" && !strings.Contains(refusal, "sbx rm -f agent-sandbox-x-00000000") {
			t.Errorf("%s: the refusal does not name the fix: %q", c.name, refusal)
		}
	}
}

func TestParseList(t *testing.T) {
	out := "agent-sandbox-pi-1234abcd\nclaude-myproj\n\nagent-sandbox-claude-deadbeef   running\nSANDBOX AGENT\nagent-sandbox-pi-1234abcd\n"
	got := ParseList(out)
	if want := []string{"agent-sandbox-claude-deadbeef", "agent-sandbox-pi-1234abcd"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ParseList = %q, want %q", got, want)
	}
	if ValidName("agent-sandbox-../../x") || ValidName("agent-sandbox-a/b") {
		t.Error("a name with a path separator is accepted as a record file name")
	}
}

func TestRecordsAndClassify(t *testing.T) {
	root := t.TempDir()
	wd := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	for _, r := range []Record{
		{Name: "agent-sandbox-pi-11111111", Agent: "pi", Workdir: wd, Created: now},
		{Name: "agent-sandbox-pi-22222222", Agent: "pi", Workdir: wd, Created: now},
		{Name: "agent-sandbox-pi-33333333", Agent: "pi", Workdir: filepath.Join(wd, "gone"), Created: now},
		{Name: "agent-sandbox-gone-44444444", Agent: "gone", Workdir: wd, Created: now},
	} {
		if err := SaveRecord(root, r); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(filepath.Join(RecordDir(root), "agent-sandbox-pi-11111111.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, mode %v", err, st.Mode())
	}
	if got := Records(root); len(got) != 4 {
		t.Errorf("Records = %q", got)
	}
	current := func(r Record) (string, error) {
		if r.Agent == "gone" {
			return "", os.ErrNotExist
		}
		return "agent-sandbox-pi-11111111", nil
	}
	names := []string{"agent-sandbox-gone-44444444", "agent-sandbox-pi-11111111", "agent-sandbox-pi-22222222", "agent-sandbox-pi-33333333", "agent-sandbox-x-55555555"}
	got := map[string]Status{}
	for _, l := range Classify(names, root, current) {
		got[l.Name] = l.Status
		if l.Reason == "" {
			t.Errorf("%s: no reason", l.Name)
		}
	}
	want := map[string]Status{
		"agent-sandbox-pi-11111111":   Current,
		"agent-sandbox-pi-22222222":   Stale,
		"agent-sandbox-pi-33333333":   Stale,
		"agent-sandbox-gone-44444444": Stale,
		"agent-sandbox-x-55555555":    Unknown,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Classify:\n got %v\nwant %v", got, want)
	}
	if err := DeleteRecord(root, "agent-sandbox-pi-22222222"); err != nil {
		t.Fatal(err)
	}
	if r, _ := LoadRecord(root, "agent-sandbox-pi-22222222"); r != nil {
		t.Error("record still there after DeleteRecord")
	}
}

// TestLoadRecordUnreadable: a record that exists but cannot be read is an
// error, never "no record" (issue 15 item 1).
func TestLoadRecordUnreadable(t *testing.T) {
	root := t.TempDir()
	name := "agent-sandbox-pi-12345678"
	if r, err := LoadRecord(root, name); r != nil || err != nil {
		t.Fatalf("absent record: %v, %v", r, err)
	}
	if err := os.MkdirAll(RecordDir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing.json", recordPath(root, name)); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRecord(root, name)
	if r != nil || err == nil || !strings.Contains(err.Error(), "dangling symlink to missing.json") || !strings.Contains(err.Error(), "sbx rm -f "+name) {
		t.Errorf("dangling record: %v, %v; want an error naming the link and the fix", r, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedCopy(in []string) []string { return uniq.Sorted(in) }
