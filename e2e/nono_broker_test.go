package e2e

// The allow-list rows under nono's own proxy (issue 25 item 2): what
// broker_test.go holds the built-in engine's egress broker to, run with
// --sandbox-backend nono against the real nono, alone: on a simulated host
// without user namespaces (newNonoAloneRun), the only place where nono
// runs without the namespace view around it (and its own proxy). nono's proxy is the door
// there: HTTP_PROXY and HTTPS_PROXY name it (with its per-run token), and
// NO_PROXY is nono's own "localhost,127.0.0.1". The host-side servers
// listen on 127.0.0.2 and 127.0.0.3, loopback addresses outside nono's
// NO_PROXY, so that requests to them go through nono's proxy as requests
// to a remote API would, and stay on this machine.
//
// Where nono's result differs from the built-in engine's the row pins
// nono's measured behaviour (nono 0.78.0) and says so; the README's table
// ("Escape classes by backend") lists the same differences.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nonoFlags selects the nono backend.
var nonoFlags = []string{"--sandbox-backend", "nono"}

// serveAt starts an HTTP (or HTTPS) test server on addr ("127.0.0.2:0");
// an HTTPS server gets a certificate for the address's IP (httptest's own
// names only 127.0.0.1, ::1 and example.com).
func serveAt(t *testing.T, addr string, withTLS bool, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("cannot listen on %s (Linux routes all of 127.0.0.0/8 to loopback): %v", addr, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = l
	if withTLS {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t, l.Addr().(*net.TCPAddr).IP)}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// selfSigned makes a certificate for ip, valid for an hour.
func selfSigned(t *testing.T, ip net.IP) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: ip.String()},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{ip},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// hostPort is a server's "IP:port".
func hostPort(s *httptest.Server) string { return s.Listener.Addr().String() }

func text(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
}

// newNonoAloneRun is a brokerRun on a simulated host without user
// namespaces (noUserns), where a nono run is nono alone: nono's own proxy
// and ports, which these rows pin. With user namespaces nono runs inside
// the namespace view (TestNonoInView).
func newNonoAloneRun(t *testing.T) *brokerRun {
	t.Helper()
	r := newBrokerRun(t)
	r.prefix = noUserns(t)
	return r
}

// skipWithoutNono skips under -short and returns the nono under test (a
// missing nono fails where cargo can build it).
func skipWithoutNono(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real programs under the real nono; skipped with -short")
	}
	return nonoOrSkip(t)
}

// TestNonoProxyPrograms: curl, Node and Python inside nono with an allow
// list, through nono's proxy.
func TestNonoProxyPrograms(t *testing.T) {
	skipWithoutNono(t)
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: apt-get install %s (.ci/run does)", tool, tool)
		}
	}
	plain := serveAt(t, "127.0.0.2:0", false, text("plain-ok"))
	tlsSrv := serveAt(t, "127.0.0.2:0", true, text("tls-ok"))
	samehost := serveAt(t, "127.0.0.2:0", false, text("CANARY-other-port-reached"))
	other := serveAt(t, "127.0.0.3:0", false, text("CANARY-other-reached"))
	r := newNonoAloneRun(t)
	ca := filepath.Join(r.work, "ca.pem")
	writeCA(t, ca, tlsSrv)
	// nono's proxy matches host names only, so agent-sandbox refuses an
	// entry with a port under nono: the servers' host is listed whole.
	allow := append(append([]string{}, nonoFlags...), "--allow-host", "127.0.0.2")

	t.Run("curl through nono's proxy, HTTP and HTTPS", func(t *testing.T) {
		script := fmt.Sprintf(`set -e
case "$HTTPS_PROXY" in http://nono:*@127.0.0.1:*) echo proxy-is-nonos;; esac
curl -sS http://%s/ ; echo
curl -sS --cacert %s https://%s/ ; echo`, hostPort(plain), ca, hostPort(tlsSrv))
		code, out := r.cli(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		for _, want := range []string{"proxy-is-nonos", "plain-ok", "tls-ok"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
	})

	t.Run("a host not on the list is refused", func(t *testing.T) {
		script := fmt.Sprintf(`curl -sS -o /dev/null -w '%%{http_code}\n' http://%s/; curl -sS -o /dev/null -w '%%{http_code}\n' https://www.example.com/ ; true`, hostPort(other))
		code, out := r.cli(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Contains(out, "CANARY-other-reached") || !strings.Contains(out, "403") {
			t.Errorf("exit %d; want nono's 403 and no answer from the other server:\n%s", code, out)
		}
	})

	t.Run("an allow-list entry with a port is refused", func(t *testing.T) {
		// nono-cli strips ":port" from allow_domain entries (measured with
		// 0.78.0: 127.0.0.2:<plain> also admitted every other port of
		// 127.0.0.2 through its proxy), so agent-sandbox refuses such an
		// entry under nono (exit 125) instead of dropping the port; the
		// built-in engine's broker keeps it (TestBrokerRealPrograms).
		args := append(append([]string{}, nonoFlags...), "--allow-host", hostPort(plain), r.folder(), "-c", "curl -sS http://"+hostPort(samehost)+"/; echo RAN")
		code, out := r.cli(60*time.Second, nil, args...)
		if code != 125 || strings.Contains(out, "RAN") || strings.Contains(out, "CANARY") || !strings.Contains(out, fmt.Sprintf("--allow-host %q: nono cannot keep an allow-list entry to port", hostPort(plain))) {
			t.Errorf("want exit 125 naming the entry, nothing run (exit %d):\n%s", code, out)
		}
	})

	t.Run("nono's proxy without its token is refused", func(t *testing.T) {
		script := fmt.Sprintf(`p=${HTTP_PROXY##*@}
curl -sS -x "http://$p" -o /dev/null -w '%%{http_code}\n' http://%s/
curl -sS -x "http://nono:wrong-token-0123456789@$p" -o /dev/null -w '%%{http_code}\n' http://%s/`, hostPort(plain), hostPort(plain))
		_, out := r.cli(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Count(out, "407") != 2 || strings.Contains(out, "plain-ok") {
			t.Errorf("want two 407 answers:\n%s", out)
		}
	})

	t.Run("programs that ignore the proxy reach nothing", func(t *testing.T) {
		// Landlock's TCP rules are by port, not host: where nono's own
		// proxy happened to get the same port number as a test server
		// (on 127.0.0.1, the server on 127.0.0.2 or .3), that server is
		// reachable directly, the README's "by host name only" row. Such
		// a run says so instead of probing it.
		script := fmt.Sprintf(`pp=${HTTP_PROXY##*:}; pp=${pp%%%%/*}
for hp in %s %s; do [ "${hp##*:}" = "$pp" ] && echo PORT-COLLISION; done
curl -sS --noproxy '*' --max-time 5 http://%s/ && echo LEAK-other
curl -sS --noproxy '*' --max-time 5 http://%s/ && echo LEAK-listed
getent hosts example.com && echo LEAK-dns
python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b"x", ("127.0.0.53", 53)); print("LEAK-udp", s.recv(10))'
true`, hostPort(other), hostPort(plain), hostPort(other), hostPort(plain))
		_, out := r.cli(60*time.Second, nil, append(allow, r.folder(), "-c", script)...)
		if strings.Contains(out, "PORT-COLLISION") {
			t.Logf("nono's proxy has a test server's port number (Landlock rules are by port): the direct probes prove nothing this run:\n%s", out)
			return
		}
		if strings.Contains(out, "LEAK") || strings.Contains(out, "CANARY") {
			t.Errorf("a direct connection got out:\n%s", out)
		}
		if out, err := exec.Command("curl", "-sS", "--noproxy", "*", "http://"+hostPort(other)+"/").CombinedOutput(); err != nil || !strings.Contains(string(out), "CANARY") {
			t.Errorf("control: the other server is not reachable from the host: %v %s", err, out)
		}
	})

	t.Run("Node's fetch through nono's proxy", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatal("node is not installed: apt-get install nodejs (.ci/run does)")
		}
		undici := filepath.Join(filepath.Dir(agentBinDir()), "undici")
		if _, err := os.Stat(undici); err != nil {
			t.Fatalf("undici (installed with pi) not found at %s: .ci/run installs pi", undici)
		}
		script := fmt.Sprintf(`%s -e '
const u = require(%q);
u.setGlobalDispatcher(new u.EnvHttpProxyAgent());
(async () => { const r = await u.fetch("http://%s/"); console.log("undici:", r.status, await r.text()); })()'`, node, undici, hostPort(plain))
		// The shell agent's folder does not grant pi's node_modules
		// (under nono only the agent's own closure is granted, not the
		// toolchains on PATH): this run's folder reads undici.
		folder := filepath.Join(filepath.Dir(r.home), "agents", "node")
		write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\n")
		write(t, filepath.Join(folder, "sandbox", "nono.json"), `{"filesystem": {"read": ["`+undici+`"]}}`)
		code, out := r.cli(60*time.Second, nil, append(allow, folder, "-c", script)...)
		if code != 0 || !strings.Contains(out, "undici: 200 plain-ok") {
			t.Errorf("exit %d, undici's fetch through nono's proxy failed:\n%s", code, out)
		}
	})
}

// writeCA writes a TLS test server's certificate as a PEM CA file.
func writeCA(t *testing.T, path string, s *httptest.Server) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNonoPorts: open_port, listen_port, --offline and an empty allow list
// under nono.
func TestNonoPorts(t *testing.T) {
	skipWithoutNono(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed: apt-get install python3 (.ci/run does)")
	}
	svc := httptest.NewServer(text("local-model-ok"))
	defer svc.Close()
	other := httptest.NewServer(text("CANARY-other"))
	defer other.Close()
	sp, op := svc.Listener.Addr().(*net.TCPAddr).Port, other.Listener.Addr().(*net.TCPAddr).Port
	// curl's exit status tells a refused connect (7) from the rest.
	script := fmt.Sprintf(`curl -sS http://localhost:%d/; echo " curl-exit=$?"
curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%d/ && echo LEAK-other
true`, sp, op)

	t.Run("open_port with block", func(t *testing.T) {
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, sp))
		code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", script)...)
		if code != 0 || !strings.Contains(out, "local-model-ok") {
			t.Errorf("exit %d, the open port did not reach the host's service:\n%s", code, out)
		}
		if strings.Contains(out, "LEAK") || strings.Contains(out, "CANARY") {
			t.Errorf("a port that is not open reached the host:\n%s", out)
		}
	})

	t.Run("open_port with an allow list is refused at once", func(t *testing.T) {
		// nono alone refuses the direct connect to an open_port in its
		// proxy mode (nono 0.78.0, linux.sandbox_policy "auto": EACCES,
		// which agents retry for minutes), so agent-sandbox refuses the
		// recipe before the run (exit 125) and names the fix that works
		// (block with open_port, above). Issue 37 item 5.
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"allow_domain": ["api.example.com", "localhost"], "open_port": [%d]}}`, sp))
		code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", script)...)
		if code != 125 || !strings.Contains(out, `"block": true, "open_port": [`) {
			t.Errorf("exit %d, want 125 (refused before the run) and the fix (block with open_port):\n%s", code, out)
		}
		for _, host := range []string{fmt.Sprintf("127.0.0.1:%d", sp), "localhost"} {
			code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), "--allow-host", host, r.folder(), "-c", script)...)
			if code != 125 || !strings.Contains(out, "open_port") {
				t.Errorf("--allow-host %s: exit %d, want 125 and the fix:\n%s", host, code, out)
			}
		}
	})

	t.Run("listen_port with block", func(t *testing.T) {
		// nono's own behaviour, pinned: with block: true and only
		// listen_port (no open_port), nono 0.78.0 installs its seccomp
		// block-all filter, so the agent cannot even create a TCP socket
		// (EPERM) to listen on the port the file names; the built-in
		// engine forwards it (TestBrokerPorts).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lp := l.Addr().(*net.TCPAddr).Port
		l.Close()
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "listen_port": [%d]}}`, lp))
		code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", fmt.Sprintf(`python3 -c '
import socket
try:
    s = socket.socket(); s.bind(("127.0.0.1", %d)); s.listen(1); print("LISTENING")
except OSError as e:
    print("REFUSED", e.errno)'`, lp))...)
		if strings.Contains(out, "LISTENING") || !strings.Contains(out, "REFUSED 1") {
			t.Errorf("under nono listen_port with block: true used to be refused (socket(): EPERM) and now is not (exit %d): update this pin and the README's table:\n%s", code, out)
		} else {
			t.Logf("nono's behaviour, pinned: listen_port %d with block: true refused (EPERM)", lp)
		}
	})

	t.Run("--offline blocks the open ports too", func(t *testing.T) {
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, sp))
		_, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), "--offline", r.folder(), "-c", fmt.Sprintf(`curl -sS --max-time 5 http://localhost:%d/ && echo LEAK`, sp))...)
		if strings.Contains(out, "LEAK") || strings.Contains(out, "local-model-ok") {
			t.Errorf("--offline let the open port through:\n%s", out)
		}
	})

	t.Run("an empty allow list reaches no host", func(t *testing.T) {
		api := serveAt(t, "127.0.0.2:0", false, text("CANARY-api"))
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), `{"network": {"allow_domain": []}}`)
		code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", fmt.Sprintf(`curl -sS --max-time 5 http://%s/; curl -sS --noproxy '*' --max-time 5 http://%s/; true`, hostPort(api), hostPort(api)))...)
		if code != 0 || strings.Contains(out, "CANARY") {
			t.Errorf("exit %d, with an empty allow list a host was reached:\n%s", code, out)
		}
		if !strings.Contains(out, "the allow list is empty") {
			t.Errorf("no warning that the allow list is empty:\n%s", out)
		}
	})

	t.Run("listen_port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lp := l.Addr().(*net.TCPAddr).Port
		l.Close()
		r := newNonoAloneRun(t)
		write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"allow_domain": ["api.example.com"], "listen_port": [%d]}}`, lp))
		write(t, filepath.Join(r.work, "index.html"), "served-from-the-sandbox")
		done := filepath.Join(r.work, "done")
		got := make(chan string, 1)
		go func() {
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", lp))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						got <- string(b)
						os.WriteFile(done, nil, 0o644)
						return
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			got <- "the agent's server never answered on the host's 127.0.0.1"
			os.WriteFile(done, nil, 0o644)
		}()
		// A minimal server: python's http.server reads /etc/mime.types,
		// which nono's /etc subset leaves unreadable (EACCES).
		script := fmt.Sprintf(`python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", %d)); s.listen(4)
while True:
    c, _ = s.accept(); c.recv(4096)
    body = open("index.html", "rb").read()
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %%d\r\n\r\n" %% len(body) + body); c.close()
' >/dev/null 2>&1 &
i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done`, lp, done)
		code, out := r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", script)...)
		if g := <-got; g != "served-from-the-sandbox" {
			t.Errorf("exit %d: %s:\n%s", code, g, out)
		}
		// After the run the port is closed again (no process outlives it).
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", lp), time.Second); err == nil {
			c.Close()
			t.Errorf("the host's 127.0.0.1:%d is still listening after the run", lp)
		}
		// A port that is not listed cannot be listened on.
		code, out = r.cli(60*time.Second, nil, append(append([]string{}, nonoFlags...), r.folder(), "-c", `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); print("LISTENING", s.getsockname())'`)...)
		if strings.Contains(out, "LISTENING") {
			t.Errorf("the agent listened on a port that listen_port does not name (exit %d):\n%s", code, out)
		}
	})
}

// TestNonoRealAgents: the real Claude Code and pi under nono: --version
// offline and with their built-in allow lists, then one turn against a
// stand-in of the Anthropic Messages API with nono inside the view (and
// pi's through nono's own proxy under nono alone), and Claude Code
// failing on its own when the list does not name it.
func TestNonoRealAgents(t *testing.T) {
	skipWithoutNono(t)
	bin := buildAgentSandbox(t)
	version := regexp.MustCompile(`(?m)^\d+\.\d+\.\d+`)
	for _, agent := range []string{"claude", "pi"} {
		pkg := map[string]string{"claude": "@anthropic-ai/claude-code", "pi": "@mariozechner/pi-coding-agent@0.73.1"}[agent]
		for _, mode := range []struct {
			name  string
			flags []string
		}{{"--offline", []string{"--offline"}}, {"its built-in allow list", nil}} {
			t.Run(agent+" --version, "+mode.name, func(t *testing.T) {
				realAgent(t, agent, pkg)
				code, out := runBuiltin(t, bin, append(append([]string{}, nonoFlags...), mode.flags...), agent, "--version")
				if code != 0 || !version.MatchString(out) {
					t.Fatalf("exit %d, want 0 and a version line: %s", code, out)
				}
			})
		}
	}

	// With user namespaces nono runs inside the view: the broker keeps
	// the allow list's port and forwards a loopback entry, as under the
	// built-in engine (TestBrokerRealAgents).
	local := newAPIStandIn(t)
	lhost := "localhost:" + strconv.Itoa(local.port())

	t.Run("claude completes a turn with nono inside the view", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		r := newBrokerRun(t)
		env := []string{"ANTHROPIC_BASE_URL=http://" + lhost, "ANTHROPIC_API_KEY=sk-ant-standin-0000"}
		code, out := r.cli(120*time.Second, env, append(append([]string{}, nonoFlags...), "--allow-host", lhost, "claude", "-p", "Say hello.")...)
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want 0 and the stand-in's reply; requests %q:\n%s", code, local.requests(), out)
		}
		if sandboxDenial.MatchString(out) {
			t.Errorf("Claude Code hit a sandbox denial:\n%s", out)
		}
	})

	t.Run("claude fails on its own when the list lacks the API", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		r := newBrokerRun(t)
		before := len(local.requests())
		env := []string{"ANTHROPIC_BASE_URL=http://" + lhost, "ANTHROPIC_API_KEY=sk-ant-standin-0000", "CLAUDE_CODE_MAX_RETRIES=1"}
		code, out := r.cli(90*time.Second, env, append(append([]string{}, nonoFlags...), "--allow-host", "api.example.com", "claude", "-p", "Say hello.")...)
		if code == 0 || code == 125 || strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want Claude Code's own failure:\n%s", code, out)
		}
		if len(local.requests()) != before {
			t.Errorf("the stand-in was reached although the list does not name it: %q", local.requests()[before:])
		}
	})

	t.Run("pi completes a turn with nono inside the view", func(t *testing.T) {
		realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
		r := newBrokerRun(t)
		models := fmt.Sprintf(`{"providers": {"standin": {"baseUrl": "http://%s", "api": "anthropic-messages", "apiKey": "standin-key", "models": [{"id": "standin-model"}]}}}`, lhost)
		write(t, filepath.Join(r.home, ".pi", "agent", "models.json"), models)
		code, out := r.cli(120*time.Second, nil, append(append([]string{}, nonoFlags...), "--allow-host", lhost, "pi", "--provider", "standin", "--model", "standin-model", "--no-session", "-p", "Say hello.")...)
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want 0 and the stand-in's reply; requests %q:\n%s", code, local.requests(), out)
		}
	})

	// nono alone (no user namespaces): through nono's own proxy, which
	// matches host names only, so the list names the host without the
	// port; 127.0.0.2 lies outside nono's NO_PROXY. Claude Code's
	// routed key is withheld there (TestNonoAloneCredentials); pi's
	// models.json key is its own.
	api := newAPIStandInAt(t, "127.0.0.2:0")
	host := "127.0.0.2:" + strconv.Itoa(api.port())
	t.Run("pi completes a turn through nono's proxy (nono alone)", func(t *testing.T) {
		realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
		r := newNonoAloneRun(t)
		models := fmt.Sprintf(`{"providers": {"standin": {"baseUrl": "http://%s", "api": "anthropic-messages", "apiKey": "standin-key", "models": [{"id": "standin-model"}]}}}`, host)
		write(t, filepath.Join(r.home, ".pi", "agent", "models.json"), models)
		code, out := r.cli(120*time.Second, nil, append(append([]string{}, nonoFlags...), "--allow-host", "127.0.0.2", "pi", "--provider", "standin", "--model", "standin-model", "--no-session", "-p", "Say hello.")...)
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want 0 and the stand-in's reply; requests %q:\n%s", code, api.requests(), out)
		}
	})
}

// newAPIStandInAt is newAPIStandIn listening on addr.
func newAPIStandInAt(t *testing.T, addr string) *apiStandIn {
	s := &apiStandIn{}
	s.Server = serveAt(t, addr, false, http.HandlerFunc(s.serve))
	return s
}
