package doctor

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono/schematest"
	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

func TestLandlockEnables(t *testing.T) {
	for _, tc := range []struct {
		abi        int
		have, lack []string
	}{
		{0, nil, []string{"filesystem rules (ABI 1)", "UDP rules (ABI 10)"}},
		{1, []string{"filesystem rules (ABI 1)"}, []string{"linking and renaming across directories (ABI 2)"}},
		{4, []string{"truncate (ABI 3)", "TCP bind/connect rules (a blocked network without a network namespace) (ABI 4)"}, []string{"ioctl on device files (ABI 5)"}},
		{5, []string{"ioctl on device files (ABI 5)"}, []string{"abstract Unix socket and signal scoping (ABI 6)"}},
		{7, []string{"abstract Unix socket and signal scoping (ABI 6)"}, []string{"connecting to Unix sockets by path (ABI 9)", "UDP rules (ABI 10)"}},
		{10, []string{"connecting to Unix sockets by path (ABI 9)", "UDP rules (ABI 10)"}, nil},
	} {
		have, lack := landlockEnables(tc.abi)
		for _, h := range tc.have {
			if !slices.Contains(have, h) {
				t.Errorf("ABI %d: %q not among enabled %q", tc.abi, h, have)
			}
		}
		for _, l := range tc.lack {
			if !slices.Contains(lack, l) {
				t.Errorf("ABI %d: %q not among missing %q", tc.abi, l, lack)
			}
		}
		if len(have)+len(lack) != len(landlock.Features) {
			t.Errorf("ABI %d: %d enabled + %d missing != %d levels", tc.abi, len(have), len(lack), len(landlock.Features))
		}
		if tc.abi >= 10 && len(lack) != 0 {
			t.Errorf("ABI %d lacks %q", tc.abi, lack)
		}
	}
}

func TestLandlockResult(t *testing.T) {
	noLL := errors.New("Landlock is not available (kernel 5.4 has no Landlock system calls)")
	for _, tc := range []struct {
		name      string
		goos      string
		abi       int
		err       error
		nono      bool
		want      Status
		detail    string
		fixSubstr string
	}{
		{"abi7", "linux", 7, nil, false, OK, "ABI 7: filesystem rules (ABI 1)", ""},
		{"abi6", "linux", 6, nil, false, OK, "abstract Unix socket and signal scoping (ABI 6); not on this kernel: connecting to Unix sockets by path (ABI 9)", ""},
		{"abi5 no scoping", "linux", 5, nil, false, Warn, "can signal your other processes", "6.12"},
		{"abi4", "linux", 4, nil, true, Warn, "TCP bind/connect", "6.12"},
		{"abi3 no tcp", "linux", 3, nil, false, Warn, "needs a private network namespace", "6.7"},
		{"missing, no nono", "linux", 0, noLL, false, Fail, "no Landlock system calls); nono is not installed either", "install nono"},
		{"missing, nono", "linux", 0, noLL, true, Warn, "nono is installed, but on Linux it needs Landlock as well", "enable Landlock"},
		{"missing, no error", "linux", 0, nil, false, Fail, "Landlock is not available", "lsm="},
		{"missing, userns", "linux", 0, noLL, false, Warn, "no Landlock system calls); user namespaces are available: the namespace view runs without Landlock, with seccomp and no_new_privs", "enable Landlock"},
		{"missing, userns, nono", "linux", 0, noLL, true, Warn, "runs them on Linux 5.10); nono needs Landlock", "enable Landlock"},
		{"darwin nono", "darwin", 0, noLL, true, OK, "not Linux (darwin)", ""},
		{"darwin no nono", "darwin", 0, noLL, false, Fail, "no kernel backend works", "install nono"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := landlockResult(tc.goos, tc.abi, tc.err, tc.nono, strings.HasSuffix(tc.name, "userns") || strings.HasSuffix(tc.name, "userns, nono"))
			if res.Check != "landlock" || res.Status != tc.want || !strings.Contains(res.Detail, tc.detail) {
				t.Errorf("got %+v, want %s with %q", res, tc.want, tc.detail)
			}
			if !strings.Contains(res.Fix, tc.fixSubstr) || (res.Status != OK) != (res.Fix != "") {
				t.Errorf("fix %q: want it to mention %q, and only for warn/fail", res.Fix, tc.fixSubstr)
			}
		})
	}
}

func TestKernelResult(t *testing.T) {
	for _, tc := range []struct {
		goos, release string
		want          Status
		detail        string
	}{
		{"linux", "6.18.44-fc-v595", OK, "Linux 6.18.44-fc-v595"},
		{"linux", "5.13.0", OK, "Linux 5.13.0"},
		{"linux", "5.12.19", Warn, "needs 5.13"},
		{"linux", "4.19.0-25-amd64", Warn, "needs 5.13"},
		{"linux", "weird", Warn, "not understood"},
		{"darwin", "24.1.0", OK, "darwin 24.1.0"},
	} {
		res := kernelResult(tc.goos, tc.release)
		if res.Status != tc.want || !strings.Contains(res.Detail, tc.detail) {
			t.Errorf("%s %s: got %+v, want %s with %q", tc.goos, tc.release, res, tc.want, tc.detail)
		}
	}
	if maj, min, ok := parseKernelRelease("6.7.1"); !ok || maj != 6 || min != 7 {
		t.Errorf("parseKernelRelease(6.7.1) = %d, %d, %v", maj, min, ok)
	}
}

func TestUsernsResult(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available bool
		s         sysctls
		euid      int
		want      Status
		detail    string
		fix       string
	}{
		{"available", true, sysctls{}, 1000, OK, "private network namespace", ""},
		{"available, apparmor 0", true, sysctls{apparmorRestrict: "0"}, 1000, OK, "apparmor_restrict_unprivileged_userns is 0", ""},
		{"root past apparmor", true, sysctls{apparmorRestrict: "1"}, 0, Warn, "available to root, but kernel.apparmor_restrict_unprivileged_userns is 1", "userns"},
		{"apparmor blocks", false, sysctls{apparmorRestrict: "1"}, 1000, Warn, "AppArmor restricts them", "userns,\n}"},
		{"max 0", false, sysctls{maxUserNS: "0", apparmorRestrict: "1"}, 1000, Warn, "user.max_user_namespaces is 0", "max_user_namespaces=10000"},
		{"debian clone 0", false, sysctls{unprivClone: "0"}, 1000, Warn, "unprivileged_userns_clone is 0", "unprivileged_userns_clone=1"},
		{"other", false, sysctls{}, 1000, Warn, "creating one failed", "seccomp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := usernsResult(tc.available, tc.s, tc.euid)
			if res.Status != tc.want || !strings.Contains(res.Detail, tc.detail) || !strings.Contains(res.Fix, tc.fix) {
				t.Errorf("got %+v, want %s with %q, fix %q", res, tc.want, tc.detail, tc.fix)
			}
			if res.Status == Warn && !strings.Contains(res.Detail, "AGENT_SANDBOX_WEAKER_SANDBOX=1") {
				t.Errorf("warning does not say what degrades: %q", res.Detail)
			}
			// The weaker sandbox serves an allow list (Landlock TCP rules
			// and the broker on the host's loopback, e2e TestNoUserNamespaces),
			// with the gaps its warning names; it used to say "no
			// allow-list network".
			if res.Status == Warn && (!strings.Contains(res.Detail, "its allow list: Landlock's TCP rules by port: the broker's port (and each open_port) reaches every host; UDP and DNS not confined") || !strings.Contains(res.Detail, "listen_port refused")) {
				t.Errorf("warning does not say what the weaker sandbox does with an allow list: %q", res.Detail)
			}
		})
	}
}

func TestNonoVersionResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      probeResult
		want   Status
		detail string
	}{
		{"0.78", probeResult{out: "nono 0.78.0\n"}, OK, "is nono 0.78.0"},
		{"0.74 lower bound", probeResult{out: "nono 0.74.0"}, OK, "0.74.0"},
		{"0.78 patch", probeResult{out: "nono v0.78.3 (abc123)"}, OK, "0.78.3"},
		{"too old", probeResult{out: "nono 0.73.9"}, Warn, "outside 0.74-0.78"},
		{"too new", probeResult{out: "nono 0.79.0"}, Warn, "outside 0.74-0.78"},
		{"1.0", probeResult{out: "nono 1.0.0"}, Warn, "outside"},
		{"two parts", probeResult{out: "nono 0.75"}, OK, "0.75.0"},
		{"no version", probeResult{out: "hello"}, Warn, "names no version"},
		{"exit 1", probeResult{code: 1, out: "nono: broken\n"}, Fail, "exit status 1: nono: broken"},
		{"timeout", probeResult{code: -1, err: errors.New("gave no answer within 1s")}, Fail, "gave no answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := nonoVersionResult("/opt/nono", tc.p)
			if res.Status != tc.want || !strings.Contains(res.Detail, tc.detail) || !strings.Contains(res.Detail, "/opt/nono") {
				t.Errorf("got %+v, want %s with %q", res, tc.want, tc.detail)
			}
		})
	}
}

func TestSbxStatus(t *testing.T) {
	ok := probeResult{out: "agent-sandbox-x-1234abcd\n"}
	for _, tc := range []struct {
		name            string
		ls, pol         probeResult
		login, policySt Status
	}{
		{"ready", ok, probeResult{out: "NAME  TYPE  DECISION\nglobal network deny **\n"}, OK, OK},
		{"logged out", probeResult{code: 1, out: "Error: not logged in"}, probeResult{code: 1}, Fail, Fail},
		{"policy uninitialised", ok, probeResult{out: "No default policy set. Run `sbx policy init`"}, OK, Fail},
		{"policy fails", ok, probeResult{code: 2, out: "daemon unreachable"}, OK, Fail},
		{"timeout", probeResult{code: -1, err: errors.New("gave no answer within 1s")}, ok, Fail, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := sbxStatus("/usr/bin/sbx", tc.ls, tc.pol)
			if len(rs) != 3 || rs[0].Check != "sbx" || rs[0].Status != OK || rs[1].Check != "sbx login" || rs[2].Check != "sbx policy" {
				t.Fatalf("got %+v", rs)
			}
			if rs[1].Status != tc.login || rs[2].Status != tc.policySt {
				t.Errorf("login %s, policy %s; want %s, %s (%+v)", rs[1].Status, rs[2].Status, tc.login, tc.policySt, rs)
			}
			if rs[1].Status == Fail && !strings.Contains(rs[1].Fix, "sbx login") || rs[2].Status == Fail && !strings.Contains(rs[2].Fix, "sbx policy init") {
				t.Errorf("fixes: %+v", rs)
			}
		})
	}
}

// fakeProgram writes an executable shell script named name into a new
// directory and returns its path.
func fakeProgram(t *testing.T, name, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// lookPathOnly finds exactly the given programs.
func lookPathOnly(progs map[string]string) func(string) (string, error) {
	return func(name string) (string, error) {
		if p, ok := progs[name]; ok {
			return p, nil
		}
		if filepath.IsAbs(name) {
			if st, err := os.Stat(name); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return name, nil
			}
		}
		return "", errors.New("not found")
	}
}

func TestNonoProbe(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         Status
		detail       string
	}{
		{"in range", "echo 'nono 0.78.0'\n", OK, "is nono 0.78.0"},
		{"out of range", "echo 'nono 0.80.1'\n", Warn, "outside 0.74-0.78"},
		{"broken", "echo 'nono: cannot start' >&2; exit 1\n", Fail, "exit status 1: nono: cannot start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nono := fakeProgram(t, "nono", tc.script)
			r := newRun(Options{LookPath: lookPathOnly(map[string]string{"nono": nono}), ProbeTimeout: 10 * time.Second})
			res := r.nonoResults()[0]
			if res.Status != tc.want || !strings.Contains(res.Detail, tc.detail) {
				t.Errorf("got %+v, want %s with %q", res, tc.want, tc.detail)
			}
		})
	}
	r := newRun(Options{LookPath: lookPathOnly(nil)})
	if res := r.nonoResults(); len(res) != 1 || res[0].Status != Warn || !strings.Contains(res[0].Detail, "not installed") {
		t.Errorf("no nono: %+v", res)
	}
}

// TestNonoSchemaProbe: `nono profile schema` is read and checked against
// the keys agent-sandbox writes: nono 0.74's schema (the reference copy, or
// AGENT_SANDBOX_NONO_SCHEMA) passes, a schema lacking a key fails naming
// it, and a nono without the subcommand is a warning. The stand-in nono
// prints a version and the schema file; e2e/nono_doctor_test.go runs
// doctor against the real nono.
func TestNonoSchemaProbe(t *testing.T) {
	schema, err := os.ReadFile(schematest.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, schema, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, bytes.Replace(schema, []byte(`"workdir"`), []byte(`"workdir_renamed"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, schemaCmd string
		want            Status
		detail          string
	}{
		{"0.74 schema", "cat " + good, OK, "declares every key"},
		{"key missing", "cat " + bad, Fail, "does not know the profile keys workdir"},
		{"no subcommand", "echo 'error: unrecognized subcommand' >&2; exit 2", Warn, "were not checked"},
		{"not JSON", "echo schema", Warn, "no usable schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nono := fakeProgram(t, "nono", "if [ \"$1\" = --version ]; then echo 'nono 0.74.0'; else "+tc.schemaCmd+"; fi\n")
			r := newRun(Options{LookPath: lookPathOnly(map[string]string{"nono": nono}), ProbeTimeout: 10 * time.Second})
			res := r.nonoResults()
			if len(res) != 2 || res[1].Check != "nono schema" || res[1].Status != tc.want || !strings.Contains(res[1].Detail, tc.detail) {
				t.Errorf("got %+v, want a nono schema check %s with %q", res, tc.want, tc.detail)
			}
		})
	}
}

// A probe that never answers, and whose child keeps the output pipe open,
// is cut off at the timeout.
func TestProbeTimeout(t *testing.T) {
	nono := fakeProgram(t, "nono", "sleep 60 & sleep 60\n")
	r := newRun(Options{LookPath: lookPathOnly(map[string]string{"nono": nono}), ProbeTimeout: 300 * time.Millisecond})
	start := time.Now()
	all := r.nonoResults()
	res := all[0]
	if len(all) != 1 {
		t.Errorf("a nono that does not answer --version was probed further: %+v", all)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the probe took %v", d)
	}
	if res.Status != Fail || !strings.Contains(res.Detail, "gave no answer within 300ms") {
		t.Errorf("got %+v", res)
	}
}

func TestSbxProbe(t *testing.T) {
	ready := `case "$1 $2" in
"ls -q") echo agent-sandbox-x-12345678 ;;
"policy ls") echo 'global network deny **' ;;
*) exit 3 ;;
esac
`
	loggedOut := "echo 'Error: you are not logged in; run sbx login' >&2; exit 1\n"
	for _, tc := range []struct {
		name, script  string
		login, policy Status
	}{
		{"ready", ready, OK, OK},
		{"logged out", loggedOut, Fail, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx := fakeProgram(t, "sbx", tc.script)
			r := newRun(Options{LookPath: lookPathOnly(map[string]string{"sbx": sbx}), ProbeTimeout: 10 * time.Second})
			rs := r.sbxResults()
			if len(rs) != 3 || rs[1].Status != tc.login || rs[2].Status != tc.policy {
				t.Errorf("got %+v", rs)
			}
		})
	}
	r := newRun(Options{LookPath: lookPathOnly(nil)})
	rs := r.sbxResults()
	if len(rs) != 1 || rs[0] != (Result{Check: "sbx", Status: OK, Detail: "not installed (only needed for --sandbox-backend sbx)"}) {
		t.Errorf("no sbx: %+v", rs)
	}
}

// The real host probes, once: every host check is there and well formed.
func TestHostReal(t *testing.T) {
	r := newRun(Options{ProbeTimeout: 30 * time.Second})
	r.host()
	var checks []string
	for _, res := range r.results {
		checks = append(checks, res.Check)
		wellFormed(t, res)
	}
	want := []string{"landlock", "kernel", "user namespaces", "nono", "sbx"}
	if runtime.GOOS == "linux" {
		want = append(want, "memory bound")
	}
	for _, c := range want {
		if !slices.Contains(checks, c) {
			t.Errorf("no %q check in %q", c, checks)
		}
	}
	if runtime.GOOS == "linux" {
		if res := r.results[0]; res.Status == OK && !strings.HasPrefix(res.Detail, "ABI ") {
			t.Errorf("landlock: %+v", res)
		}
	}
	t.Logf("%+v", r.results)
}

func wellFormed(t *testing.T, res Result) {
	t.Helper()
	switch {
	case res.Check == "" || res.Detail == "":
		t.Errorf("empty check or detail: %+v", res)
	case res.Status != OK && res.Status != Warn && res.Status != Fail:
		t.Errorf("bad status: %+v", res)
	case res.Status == OK && res.Fix != "":
		t.Errorf("ok with a fix: %+v", res)
	case res.Status != OK && res.Fix == "":
		t.Errorf("%s without a fix: %+v", res.Status, res)
	case strings.Contains(res.Detail, "\n"):
		t.Errorf("multi-line detail: %+v", res)
	}
}

func TestMemoryResult(t *testing.T) {
	if res := memoryResult(nil, true); res.Status != OK || !strings.Contains(res.Detail, "systemd user scope") || !strings.HasSuffix(res.Detail, ", and 8192 tasks") {
		t.Errorf("with a user manager: %+v", res)
	}
	if res := memoryResult(nil, false); res.Status != OK || !strings.Contains(res.Detail, "no task bound") {
		t.Errorf("with a user manager without pids: %+v", res)
	}
	res := memoryResult(errors.New("no systemd user manager runs for uid 1000"), false)
	if res.Status != Warn || !strings.HasSuffix(res.Detail, ": no systemd user manager runs for uid 1000") || !strings.Contains(res.Fix, "loginctl enable-linger") {
		t.Errorf("without one: %+v", res)
	}
	wellFormed(t, res)
}
