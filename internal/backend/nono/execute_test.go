package nono

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// recording is what recordingNono writes.
type recording struct {
	Argv           []string `json:"argv"`
	Env            []string `json:"env"`
	Cwd            string   `json:"cwd"`
	Profile        string   `json:"profile"`
	ProfileMode    string   `json:"profile_mode"`
	StateDirMode   string   `json:"state_dir_mode"`
	MiseCacheIsDir bool     `json:"mise_cache_is_dir"`
}

// recordingFile is written by recordingNono in its working directory.
const recordingFile = "recordingNono.json"

// recordingNono is a stand-in for nono (the real nono cannot run on these
// machines): the test binary, started under the name "nono", records its
// argv, environment, working directory and the profile it was pointed at
// into recordingNono.json in its working directory, then exits the way
// the agent arguments ask ("--exit N", "--signal") without sandboxing or
// running anything.
func recordingNono(args []string) int {
	var r recording
	r.Argv = args
	r.Env = os.Environ()
	r.Cwd, _ = os.Getwd()
	if i := slices.Index(args, "--profile"); i >= 0 && i+1 < len(args) {
		if b, err := os.ReadFile(args[i+1]); err == nil {
			r.Profile = string(b)
		}
		if st, err := os.Stat(args[i+1]); err == nil {
			r.ProfileMode = st.Mode().Perm().String()
		}
		dir := filepath.Dir(args[i+1])
		if st, err := os.Stat(dir); err == nil {
			r.StateDirMode = st.Mode().Perm().String()
		}
		if st, err := os.Stat(filepath.Join(dir, MiseCacheName)); err == nil {
			r.MiseCacheIsDir = st.IsDir()
		}
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(recordingFile, b, 0o600); err != nil {
		return 98
	}
	agent := args
	if i := slices.Index(args, "--"); i >= 0 {
		agent = args[i+1:]
	}
	for i, a := range agent {
		switch {
		case a == "--exit" && i+1 < len(agent):
			n, _ := strconv.Atoi(agent[i+1])
			return n
		case a == "--signal":
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
			select {}
		}
	}
	return 0
}

// fakeNono installs the test binary as "nono" in the tree.
func fakeNono(t *testing.T, tr *tree) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return tr.symlink("fake-bin/nono", self)
}

func readRecording(t *testing.T, s spec.Spec) recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Workdir, recordingFile))
	if err != nil {
		t.Fatalf("the stand-in nono did not run in the workdir: %v", err)
	}
	var r recording
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// TestExecuteRecordingNono runs Execute against the recording stand-in and
// checks what nono would get: the exact argv (-s before run), the workdir
// as cwd, the environment (host limited to the pass list, no inherited
// NONO_*, NONO_NO_UPDATE_CHECK=1, MISE_CACHE_DIR, the run's own TMPDIR),
// the profile already
// written (mode 0600 in a 0700 dir, identical to the prepared one) and the
// exit status passed through.
func TestExecuteRecordingNono(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "rec")
	s.Argv = append(s.Argv, "--exit", "42")
	s.EnvPass = append(s.EnvPass, "KEEP_ME")
	s.EnvSet = map[string]string{"SET_ME": "set", "PATH": "/opt/x/bin:/usr/bin"}
	for k, v := range map[string]string{
		"NONO_ALLOW": "/", "NONO_PROFILE": "permissive", "NONO_NETWORK_PROFILE": "enterprise",
		"NONO_NO_UPDATE_CHECK": "0", "KEEP_ME": "yes", "DROP_ME": "secret", "XDG_STATE_HOME": tr.path("home/.local/state"),
		"HOME": s.Home,
	} {
		t.Setenv(k, v)
	}
	p, err := Prepare(s, Options{Path: fakeNono(t, tr)})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := Execute(p, s, launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
	if code != 42 {
		t.Fatalf("exit status %d, want the agent's 42; stderr:\n%s", code, stderr.String())
	}
	r := readRecording(t, s)

	wantArgv := append([]string{"-s", "run", "--profile", ProfilePath(s), "--workdir", s.Workdir, "--allow-cwd", "--"}, s.Argv...)
	if !slices.Equal(r.Argv, wantArgv) {
		t.Errorf("nono argv:\n got %q\nwant %q", r.Argv, wantArgv)
	}
	if r.Cwd != s.Workdir {
		t.Errorf("nono ran in %s, want the workdir %s", r.Cwd, s.Workdir)
	}
	env := envMap(r.Env)
	for k := range env {
		if strings.HasPrefix(k, "NONO_") && k != "NONO_NO_UPDATE_CHECK" {
			t.Errorf("inherited %s reached nono", k)
		}
	}
	want := map[string]string{
		"NONO_NO_UPDATE_CHECK": "1", "MISE_CACHE_DIR": MiseCacheDir(s), "KEEP_ME": "yes",
		"PATH": "/opt/x/bin:/usr/bin", "HOME": s.Home, "XDG_STATE_HOME": tr.path("home/.local/state"),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("nono's %s = %q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"DROP_ME", "SET_ME"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s reached nono's environment (SET_ME belongs in the profile's set_vars)", k)
		}
	}
	if n := strings.Count(strings.Join(r.Env, "\n"), "NONO_NO_UPDATE_CHECK="); n != 1 {
		t.Errorf("NONO_NO_UPDATE_CHECK appears %d times", n)
	}
	// The run's own TMPDIR: fresh, inside the agent's tmp/, granted in
	// its place, and gone after the run.
	runTmp := env["TMPDIR"]
	if filepath.Dir(runTmp) != s.TempDir() || !strings.HasPrefix(filepath.Base(runTmp), "run-") {
		t.Errorf("nono's TMPDIR = %q, want a run-* directory in %s", runTmp, s.TempDir())
	}
	if _, err := os.Stat(runTmp); err == nil {
		t.Errorf("the run's TMPDIR %s is left after the run", runTmp)
	}
	wantProfile, _ := Marshal(WithRunTemp(p.Profile, s.TempDir(), runTmp))
	if r.Profile != string(wantProfile) {
		t.Errorf("profile nono read:\n%s\nwant:\n%s", r.Profile, wantProfile)
	}
	if strings.Contains(r.Profile, `"`+s.TempDir()+`"`) {
		t.Errorf("the profile grants the agent's whole tmp/ %s, not the run's own directory:\n%s", s.TempDir(), r.Profile)
	}
	if r.ProfileMode != "-rw-------" || r.StateDirMode != "-rwx------" {
		t.Errorf("profile mode %s in a dir of mode %s, want -rw------- in -rwx------", r.ProfileMode, r.StateDirMode)
	}
	if !r.MiseCacheIsDir {
		t.Errorf("%s was not created before nono started", MiseCacheDir(s))
	}
	var prof Profile
	if err := json.Unmarshal([]byte(r.Profile), &prof); err != nil {
		t.Fatal(err)
	}
	if prof.Environment.SetVars["SET_ME"] != "set" || !slices.Contains(prof.Environment.AllowVars, "KEEP_ME") {
		t.Errorf("environment in the profile: %+v", prof.Environment)
	}
	if stderr.Len() != 0 {
		t.Errorf("Execute printed without --verbose:\n%s", stderr.String())
	}
}

// TestExecuteVerbose drops -s and prints the notes.
func TestExecuteVerbose(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "rec")
	s.Read = []string{tr.path("not-there")}
	p, err := Prepare(s, Options{Path: fakeNono(t, tr), Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := Execute(p, s, launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	r := readRecording(t, s)
	if len(r.Argv) == 0 || r.Argv[0] != "run" || slices.Contains(r.Argv[:slices.Index(r.Argv, "--")], "-s") {
		t.Errorf("verbose argv %q: want `run ...` without -s", r.Argv)
	}
	if !strings.Contains(stderr.String(), "agent-sandbox: not granted: "+tr.path("not-there")) {
		t.Errorf("verbose notes missing from stderr:\n%s", stderr.String())
	}
}

// TestExecuteSignal: an agent killed by SIGTERM gives 128+15.
func TestExecuteSignal(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "rec")
	s.Argv = append(s.Argv, "--signal")
	p, err := Prepare(s, Options{Path: fakeNono(t, tr)})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := Execute(p, s, launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr}); code != 128+15 {
		t.Fatalf("exit %d, want 143: %s", code, stderr.String())
	}
}

// TestExecuteRefusals: no nono, a refusal, a missing agent command and an
// unwritable state dir stop Execute before anything starts.
func TestExecuteRefusals(t *testing.T) {
	tr := newTree(t)
	stdio := func(b *bytes.Buffer) launch.Stdio {
		return launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: b}
	}
	t.Run("nono missing", func(t *testing.T) {
		s := baseSpec(tr, "a")
		p, err := Prepare(s, Options{Path: tr.path("gone/nono")})
		if err != nil {
			t.Fatal(err)
		}
		var e bytes.Buffer
		if code := Execute(p, s, stdio(&e)); code != 125 || !strings.Contains(e.String(), "agent-sandbox: error: nono is not installed") || !strings.Contains(e.String(), "install nono") {
			t.Errorf("exit %d, stderr %q", code, e.String())
		}
		if _, err := os.Stat(ProfilePath(s)); err == nil {
			t.Error("profile written although nono is missing")
		}
	})
	t.Run("nono not on PATH", func(t *testing.T) {
		s := baseSpec(tr, "b")
		p, err := Prepare(s, Options{Path: "nono"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Refusal == "" {
			t.Fatal("no refusal for a nono that was not found")
		}
		var e bytes.Buffer
		if code := Execute(p, s, stdio(&e)); code != 125 || strings.Count(e.String(), "agent-sandbox: error:") != 1 {
			t.Errorf("exit %d, stderr %q", code, e.String())
		}
	})
	t.Run("command not found", func(t *testing.T) {
		s := baseSpec(tr, "c")
		s.Argv, s.CommandFound = []string{"no-such-agent"}, false
		p, err := Prepare(s, Options{Path: fakeNono(t, newTree(t))})
		if err != nil {
			t.Fatal(err)
		}
		var e bytes.Buffer
		if code := Execute(p, s, stdio(&e)); code != 127 || !strings.Contains(e.String(), `"no-such-agent" not found`) {
			t.Errorf("exit %d, stderr %q", code, e.String())
		}
		if _, err := os.Stat(filepath.Join(s.Workdir, recordingFile)); err == nil {
			t.Error("nono started for a command that does not exist")
		}
	})
	t.Run("memory_max where nono cannot make its cgroup", func(t *testing.T) {
		defer func(f func() error) { delegated = f }(delegated)
		delegated = func() error {
			return errors.New("this process's cgroup /user.slice/user-1000.slice/session-3.scope does not lie under your systemd user manager")
		}
		s := baseSpec(tr, "m")
		s.MemoryMax = 3 << 30
		p, err := Prepare(s, Options{Path: fakeNono(t, newTree(t))})
		if err != nil {
			t.Fatal(err)
		}
		var e bytes.Buffer
		if code := Execute(p, s, stdio(&e)); code != 125 || !strings.Contains(e.String(), `agent.toml: memory_max = "3G" cannot be applied under nono (--memory): this process's cgroup /user.slice/user-1000.slice/session-3.scope`) {
			t.Errorf("exit %d, stderr %q", code, e.String())
		}
		if _, err := os.Stat(filepath.Join(s.Workdir, recordingFile)); err == nil {
			t.Error("nono started for a memory bound it cannot apply")
		}
	})
	t.Run("state dir cannot be created", func(t *testing.T) {
		s := baseSpec(tr, "d")
		// A file where a parent directory should be stops even root.
		s.StateDir = filepath.Join(tr.file("blocker", 0o600), "agents", "d")
		p, err := Prepare(s, Options{Path: fakeNono(t, newTree(t))})
		if err != nil {
			t.Fatal(err)
		}
		var e bytes.Buffer
		if code := Execute(p, s, stdio(&e)); code != 125 || !strings.Contains(e.String(), "agent-sandbox's state directory "+s.StateDir+" cannot be created or written") || !strings.Contains(e.String(), "is not a directory: move it away") {
			t.Errorf("exit %d, stderr %q", code, e.String())
		}
	})
}

// TestWriteProfileAtomic: a symlink planted at the profile path is
// replaced, not followed; an existing wide state dir is tightened; no
// temporary file is left behind.
func TestWriteProfileAtomic(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "w")
	if err := os.MkdirAll(s.StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := tr.file("victim.txt", 0o644)
	if err := os.Symlink(victim, ProfilePath(s)); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s, Options{Path: "/usr/bin/nono"})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteProfile(p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "#!/bin/sh\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	st, err := os.Lstat(ProfilePath(s))
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("profile: %v %v", st.Mode(), err)
	}
	dst, _ := os.Stat(s.StateDir)
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", dst.Mode().Perm())
	}
	entries, _ := os.ReadDir(s.StateDir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	b, _ := os.ReadFile(ProfilePath(s))
	want, _ := Marshal(p.Profile)
	if !bytes.Equal(b, want) {
		t.Errorf("written profile differs from the prepared one")
	}
}

// TestPrepareWritesNothing: Prepare (and so --dry-run) leaves the state
// dir alone.
func TestPrepareWritesNothing(t *testing.T) {
	tr := newTree(t)
	s := baseSpec(tr, "dry")
	if _, err := Prepare(s, Options{Path: "/usr/bin/nono"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.StateDir); !os.IsNotExist(err) {
		t.Errorf("Prepare created %s (%v)", s.StateDir, err)
	}
}

// TestEnviron checks the environment computation on its own.
func TestEnviron(t *testing.T) {
	s := spec.Spec{StateDir: "/s", EnvPass: []string{"HOME", "TERM", "FOO"}, EnvSet: map[string]string{}}
	p := Prepared{Steps: []spec.Command{{Argv: []string{"/nono"}, Env: []string{"NONO_NO_UPDATE_CHECK=1", "MISE_CACHE_DIR=/s/mise-cache"}}}}
	host := []string{"HOME=/h", "TERM=xterm", "FOO=1", "FOO=2", "BAR=secret", "NONO_ALLOW=/", "NONO_NO_UPDATE_CHECK=0",
		"XDG_CONFIG_HOME=/h/.cfg", "MISE_CACHE_DIR=/shared", "TERMINFO=/x", "broken"}
	got := Environ(p, s, host)
	want := []string{"HOME=/h", "TERM=xterm", "FOO=1", "XDG_CONFIG_HOME=/h/.cfg", "NONO_NO_UPDATE_CHECK=1", "MISE_CACHE_DIR=/s/mise-cache"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ:\n got %q\nwant %q", got, want)
	}
}

// memory_max reaches nono as --memory, in bytes, before the agent's argv;
// without it no --memory is passed.
func TestMemoryFlag(t *testing.T) {
	defer func(f func() error) { delegated = f }(delegated)
	delegated = func() error { return nil }
	tr := newTree(t)
	for _, c := range []struct {
		max  int64
		want string
	}{{0, " --allow-cwd -- "}, {spec.NoMemoryLimit, " --allow-cwd -- "}, {1536 << 20, " --allow-cwd --memory 1610612736 -- "}} {
		s := baseSpec(tr, "mem")
		s.MemoryMax = c.max
		p, err := Prepare(s, Options{Path: "/usr/bin/nono"})
		if err != nil {
			t.Fatal(err)
		}
		if argv := strings.Join(p.Steps[0].Argv, " "); !strings.Contains(argv, c.want) || p.Refusal != "" {
			t.Errorf("memory_max %d: %s (refusal %q), want %q in it", c.max, argv, p.Refusal, c.want)
		}
	}
}
