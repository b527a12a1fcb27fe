package broker

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealCurl runs curl (a real client) through the proxy with the
// environment ProxyEnv sets: plain HTTP and HTTPS through CONNECT, a name
// off the list (403 seen by curl), and the proxy without its token (407).
func TestRealCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed: cannot test a real client through the proxy")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("reached " + r.URL.Path)) })
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(h)
	defer tlsSrv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--cacert", ca}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	env := ProxyEnv(f.url)
	// NO_PROXY names loopback, as it will for the agent; this test's
	// servers are on loopback, so take it out to go through the proxy.
	var viaProxy []string
	for _, e := range env {
		if !strings.HasPrefix(strings.ToLower(e), "no_proxy=") {
			viaProxy = append(viaProxy, e)
		}
	}
	if out, err := run(viaProxy, plain.URL+"/plain"); err != nil || out != "reached /plain" {
		t.Errorf("curl plain HTTP: %q %v", out, err)
	}
	if out, err := run(viaProxy, tlsSrv.URL+"/tls"); err != nil || out != "reached /tls" {
		t.Errorf("curl HTTPS: %q %v", out, err)
	}
	out, err := run(viaProxy, "-w", "%{http_code}", "-o", "/dev/null", "http://denied.invalid/")
	if err != nil || out != "403" {
		t.Errorf("curl to a name off the list: %q %v, want 403", out, err)
	}
	out, err = run(viaProxy, "https://denied.invalid/")
	if err == nil || !strings.Contains(out, "403") {
		t.Errorf("curl CONNECT to a name off the list: %q %v, want a 403 failure", out, err)
	}
	noToken := strings.Replace(f.url, "agent-sandbox:"+f.token+"@", "", 1)
	out, err = run([]string{"HTTPS_PROXY=" + noToken}, tlsSrv.URL+"/")
	if err == nil || !strings.Contains(out, "407") {
		t.Errorf("curl without the token: %q %v, want a 407 failure", out, err)
	}
	f.p.Close()
	es := f.audit(t)
	if len(es) != 5 {
		t.Errorf("audit has %d lines, want 5: %+v", len(es), es)
	}
}
