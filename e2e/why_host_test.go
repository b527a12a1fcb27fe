package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWhyHostAgrees (issue 23 item 7): every `why --host` verdict is
// checked against a real connection from inside the sandbox, in every
// network mode of the built-in engine: --offline, a blocked network with a
// forwarded open_port, an allow list (with and without --allow-host
// localhost:PORT, and naming 127.0.0.1 without a port), and --network
// open. The targets are loopback listeners this test starts on the host
// (127.0.0.1 and ::1), forwarded or not, and two names: one on the allow
// list and one not. Names ending in .invalid never resolve, so the
// connection to a name is made with curl --resolve NAME:PORT:127.0.0.1
// where curl connects itself (open, blocked), and through the egress
// broker where there is one, whose answer is the sandbox's decision: 403
// refused, 502 admitted (and the name then failed to resolve). Each
// loopback target is also tried through the broker explicitly (curl with
// an empty --noproxy), as a client that ignores NO_PROXY would: it must
// not reach more than the direct connection.
func TestWhyHostAgrees(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed: apt-get install curl (.ci/run does)")
	}
	r := newBrokerRun(t)
	// Three ports, each served on the host's 127.0.0.1 and (when the
	// host has IPv6) ::1: P is never forwarded, F is the folder's
	// open_port, A is named by --allow-host localhost:A.
	v6 := true
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback on this host (%v): the ::1 rows are left out", err)
		v6 = false
	} else {
		l.Close()
	}
	serve := func() int {
		t.Helper()
		for try := 0; try < 20; try++ {
			l4, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l4.Addr().(*net.TCPAddr).Port
			ls := []net.Listener{l4}
			if v6 {
				l6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", port))
				if err != nil {
					l4.Close() // taken on ::1: another port
					continue
				}
				ls = append(ls, l6)
			}
			for _, l := range ls {
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "pong") })}
				go srv.Serve(l)
				t.Cleanup(func() { srv.Close() })
			}
			return port
		}
		t.Fatal("no port free on both 127.0.0.1 and ::1")
		return 0
	}
	P, F, A := serve(), serve(), serve()
	write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, F))

	type row struct {
		name, host string // host is HOST:PORT as why takes it
		url        string
		resolve    string // curl --resolve, for a name
		loopback   bool   // also tried through the broker explicitly
	}
	hp := func(h string, p int) string { return net.JoinHostPort(h, strconv.Itoa(p)) }
	rows := []row{
		{"127.0.0.1", hp("127.0.0.1", P), "http://" + hp("127.0.0.1", P) + "/", "", true},
		{"localhost", hp("localhost", P), "http://" + hp("localhost", P) + "/", "", true},
		{"::1", hp("::1", P), "http://" + hp("::1", P) + "/", "", true},
		{"open_port", hp("127.0.0.1", F), "http://" + hp("127.0.0.1", F) + "/", "", true},
		{"open_port-::1", hp("::1", F), "http://" + hp("::1", F) + "/", "", true},
		{"localhost:A", hp("localhost", A), "http://" + hp("localhost", A) + "/", "", true},
		{"allowed-name", hp("allowed.invalid", P), "http://" + hp("allowed.invalid", P) + "/", fmt.Sprintf("allowed.invalid:%d:127.0.0.1", P), false},
		{"denied-name", hp("denied.invalid", P), "http://" + hp("denied.invalid", P) + "/", fmt.Sprintf("denied.invalid:%d:127.0.0.1", P), false},
	}
	if !v6 {
		var keep []row
		for _, rw := range rows {
			if !strings.Contains(rw.name, "::1") {
				keep = append(keep, rw)
			}
		}
		rows = keep
	}
	// The modes, and the verdict each row must get (the agreement alone
	// would also hold if everything were refused).
	modes := []struct {
		name  string
		flags []string
		allow map[string]bool // rows that reach the host
	}{
		{"offline", []string{"--offline"}, map[string]bool{}},
		{"block-open_port", nil, map[string]bool{"open_port": true, "open_port-::1": true}},
		{"allowlist", []string{"--allow-host", "allowed.invalid", "--allow-host", fmt.Sprintf("localhost:%d", A), "--allow-host", "127.0.0.1"},
			map[string]bool{"open_port": true, "open_port-::1": true, "localhost:A": true, "allowed-name": true}},
		{"allowlist-without-localhost", []string{"--allow-host", "allowed.invalid"},
			map[string]bool{"open_port": true, "open_port-::1": true, "allowed-name": true}},
		{"open", []string{"--network", "open"}, map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true, "open_port": true, "open_port-::1": true, "localhost:A": true, "allowed-name": true, "denied-name": true}},
	}
	var script strings.Builder
	for _, rw := range rows {
		extra := ""
		if rw.resolve != "" {
			extra = "--resolve " + rw.resolve + " "
		}
		fmt.Fprintf(&script, "echo \"%s direct $(curl -g -sS -o /dev/null -w '%%{http_code}' --max-time 5 %s'%s' 2>/dev/null)\"\n", rw.name, extra, rw.url)
		if rw.loopback {
			fmt.Fprintf(&script, "echo \"%s proxy $(curl -g -sS -o /dev/null -w '%%{http_code}' --max-time 5 --noproxy '' '%s' 2>/dev/null)\"\n", rw.name, rw.url)
		}
	}
	// through: the sandbox let the connection reach the host's listener
	// (200), or the broker admitted it and the name then did not resolve
	// (502, 504).
	through := func(code string) bool { return code == "200" || code == "502" || code == "504" }
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			code, out := r.run(120*time.Second, nil, append(append([]string{"-q"}, m.flags...), r.folder(), "-c", script.String())...)
			if code != 0 {
				t.Fatalf("the probe run exited %d:\n%s", code, out)
			}
			t.Logf("connections from the sandbox:\n%s", out)
			got := map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) == 3 {
					got[f[0]+" "+f[1]] = f[2]
				}
			}
			for _, rw := range rows {
				wc, wo := r.cli(30*time.Second, nil, append(append([]string{"why", "--sandbox-backend", "landlock"}, m.flags...), "--host", rw.host, r.folder())...)
				if wc != 0 && wc != 1 {
					t.Errorf("why --host %s: exit %d: %s", rw.host, wc, wo)
					continue
				}
				says := wc == 0
				if says != m.allow[rw.name] {
					t.Errorf("%s: why --host %s says allowed=%v, want %v:\n%s", rw.name, rw.host, says, m.allow[rw.name], wo)
				}
				paths := []string{"direct"}
				if rw.loopback {
					paths = append(paths, "proxy")
				}
				for _, p := range paths {
					c, ok := got[rw.name+" "+p]
					if !ok {
						t.Errorf("%s %s: no result in the probe's output:\n%s", rw.name, p, out)
						continue
					}
					if through(c) != says {
						t.Errorf("%s: why --host %s says allowed=%v, but a %s connection from the sandbox got %q (reached=%v)\nwhy: %s", rw.name, rw.host, says, p, c, through(c), wo)
					}
				}
			}
		})
	}
}
