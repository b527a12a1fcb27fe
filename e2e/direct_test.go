package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestDirectAttemptsRecorded (issue 23 item 8): a connection the agent
// attempts past the broker (a loopback port nothing forwards, an address
// outside, when the network is blocked or allow-listed) is refused at
// once by its network namespace; it must be recorded like a broker
// refusal, so that the end-of-run line and `agent-sandbox log` name the
// host and port and what to add. A forwarded port is not recorded.
// Before, an agent whose API base URL pointed at an unforwarded loopback
// port retried for minutes and nothing said why.
func TestDirectAttemptsRecorded(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	fwd := host.Addr().(*net.TCPAddr).Port
	unfwd := fwd + 1
	if unfwd > 65535 {
		unfwd = fwd - 1
	}
	probe := fmt.Sprintf(`python3 -c '
import socket
for port in (%d, %d):
    s = socket.socket(); s.settimeout(2)
    print(port, s.connect_ex(("127.0.0.1", port)))
s = socket.socket(); s.settimeout(2)
print("outside", s.connect_ex(("192.0.2.7", 443)))'`, fwd, unfwd)
	for _, mode := range [][]string{{"--allow-host", fmt.Sprintf("localhost:%d", fwd)}, {"--offline"}} {
		t.Run(mode[0], func(t *testing.T) {
			r := newBrokerRun(t)
			args := append(append([]string{}, mode...), "run", "--", "sh", "-c", probe)
			_, out := r.run(60*time.Second, nil, args...)
			for _, want := range []string{fmt.Sprintf("127.0.0.1:%d ×1", unfwd), "192.0.2.7:443 ×1"} {
				if !strings.Contains(out, want) {
					t.Errorf("the end-of-run line does not name %s:\n%s", want, out)
				}
			}
			if mode[0] == "--allow-host" && strings.Contains(out, fmt.Sprintf("127.0.0.1:%d ×", fwd)) {
				t.Errorf("the forwarded port %d was reported:\n%s", fwd, out)
			}
			code, log := r.cli(30*time.Second, nil, "log", "run")
			if code != 0 || !strings.Contains(log, fmt.Sprintf("DIRECT  127.0.0.1:%d", unfwd)) || !strings.Contains(log, fmt.Sprintf("--allow-host localhost:%d", unfwd)) {
				t.Errorf("agent-sandbox log does not name the attempt and what to add (exit %d):\n%s", code, log)
			}
		})
	}
}

// TestDirectAttemptsCounted (issue 38, item 6): the view's init reports
// the first thousand distinct destinations the agent tried past the
// broker; the attempts past them were dropped without a word. An agent
// that tries 1,100 loopback ports gets 1,000 recorded and the other 100
// counted: the end-of-run line and the audit log say how many were not
// recorded.
func TestDirectAttemptsCounted(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	probe := `python3 -c '
import socket
for port in range(30000, 31100):
    s = socket.socket(); s.settimeout(2); s.connect_ex(("127.0.0.1", port)); s.close()
print("tried")'`
	r := newBrokerRun(t)
	_, out := r.run(120*time.Second, nil, "--offline", "run", "--", "sh", "-c", probe)
	if !strings.Contains(out, "tried") {
		t.Fatalf("the probe did not run:\n%s", out)
	}
	if !strings.Contains(out, "(100 of them attempts past the proxy not recorded one by one") {
		t.Errorf("the end-of-run line does not say that 100 attempts were not recorded:\n%s", out)
	}
	if log := r.audit("run"); !strings.Contains(log, "100 further connection attempts past the proxy not recorded") {
		t.Errorf("the audit log does not say that 100 attempts were not recorded:\n%.2000s", log[max(0, len(log)-2000):])
	}
}
