package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// reflectionProbe asks a route whose upstream echoes the request for what
// it echoes, as a prompt-injected agent would: plain, gzip (which the
// client asks for and does not decode), a stream with the key split
// across chunks, TRACE and TRACK, and a path that climbs out of the
// upstream's base path. It prints every answer.
const reflectionProbe = `python3 - <<'PY'
import os, http.client, urllib.parse
key = os.environ["ANTHROPIC_API_KEY"]
base = urllib.parse.urlsplit(os.environ["ANTHROPIC_BASE_URL"])
def ask(method, path, extra={}):
    c = http.client.HTTPConnection(base.hostname, base.port, timeout=20)
    h = {"x-api-key": key}
    h.update(extra)
    c.request(method, base.path + path, headers=h)
    r = c.getresponse()
    body = r.read().decode("latin-1")
    print("=== %s %s %d" % (method, path, r.status))
    for k, v in r.getheaders():
        print("H %s: %s" % (k, v))
    print(body)
ask("GET", "/echo")
ask("GET", "/gzip", {"Accept-Encoding": "gzip"})
ask("GET", "/stream")
ask("TRACE", "/echo")
ask("TRACK", "/echo")
ask("GET", "/../outside")
print("PHANTOM=" + key)
PY`

// TestCredentialReflection (issue 38, item 5): an API that reflects the
// request (TRACE, a debug endpoint, an error quoting the key) must not
// hand the agent the real key the broker put in. A TLS stand-in that
// echoes the request's headers in its answer (its header and body; gzip
// whatever was asked; a stream with the key split across two chunks)
// shows the agent only its phantom; TRACE and TRACK are refused (405) and
// never reach it; "/ROUTE/../x" stays below the upstream's base path. In
// the view and in the weaker sandbox.
func TestCredentialReflection(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	real := "sk-ant-REALKEYMARK-" + strings.Repeat("5", 24)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" accept-encoding="+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		var dump bytes.Buffer
		r.Header.Write(&dump)
		w.Header().Set("X-Debug-Key", r.Header.Get("x-api-key"))
		switch {
		case strings.HasSuffix(r.URL.Path, "/gzip"):
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(dump.Bytes())
			zw.Close()
		case strings.HasSuffix(r.URL.Path, "/stream"):
			k := r.Header.Get("x-api-key")
			fmt.Fprint(w, "data: "+k[:len(k)/2])
			// Two HTTP chunks: the broker reads the body a chunk at a time.
			w.(http.Flusher).Flush()
			fmt.Fprint(w, k[len(k)/2:]+"\n\n")
		default:
			w.Write(dump.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeCA(t, ca, srv)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, engine := range []string{"view", "weaker"} {
		t.Run(engine, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			var prefix, extra []string
			if engine == "weaker" {
				prefix, extra = noUserns(t), []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
			}
			r := newBrokerRun(t)
			folder := filepath.Join(filepath.Dir(r.home), "agents", "keyed")
			write(t, filepath.Join(folder, "agent.toml"), credentialsFolder)
			write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
			env := append([]string{"ANTHROPIC_API_KEY=" + real, "ANTHROPIC_BASE_URL=" + srv.URL + "/base", "SSL_CERT_FILE=" + ca}, extra...)
			flags := []string{"--sandbox-backend", "landlock", "--allow-host", fmt.Sprintf("127.0.0.1:%d", port)}
			args := append(append(append([]string{}, prefix...), r.bin), append(flags, folder, "-c", reflectionProbe)...)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir = r.work
			cmd.Env = withCover(append([]string{"HOME=" + r.home, "PATH=" + agentBinDir() + string(os.PathListSeparator) + pathFor(flags), "LANG=C.UTF-8", "TERM=dumb"}, env...))
			b, err := cmd.CombinedOutput()
			out := string(b)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if strings.Contains(out, "REALKEYMARK") {
				t.Errorf("the real key reached the agent through the upstream's echo:\n%s", out)
			}
			for _, want := range []string{"=== GET /echo 200", "=== GET /gzip 200", "=== GET /stream 200", "=== TRACE /echo 405", "=== TRACK /echo 405", "data: sk-agent-sandbox-phantom-", "H X-Debug-Key: sk-agent-sandbox-phantom-", "X-Api-Key: sk-agent-sandbox-phantom-"} {
				if !strings.Contains(out, want) {
					t.Errorf("the answers do not hold %q:\n%s", want, out)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 4 {
				t.Errorf("the stand-in saw %q, want the four GETs", seen)
			}
			for _, s := range seen {
				if !strings.HasPrefix(s, "GET /base/") || !strings.HasSuffix(s, "accept-encoding=identity") {
					t.Errorf("the stand-in saw %q: a TRACE forwarded, a path out of the base, or a compressed answer asked for", s)
				}
			}
		})
	}
}
