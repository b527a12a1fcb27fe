package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestInterceptRoute: a route that intercepts answers a CONNECT to its
// upstream's host with this run's CA: a client that trusts the CA (gh,
// which takes no base URL) has its requests served as requests to the
// route (the phantom, sent as "token" or "Bearer", checked and replaced by
// the real value, kept-alive requests each checked); a wrong phantom is
// refused; a client that does not trust the CA gets no connection; the
// audit holds neither value.
func TestInterceptRoute(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "upstream-ok")
	}))
	defer up.Close()
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	port := up.Listener.Addr().(*net.TCPAddr).Port
	ca, err := NewCA("test-agent", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	real, phantom := "ghp_real0123456789abcdef", "sk-agent-sandbox-phantom-"+NewToken()
	route := Route{Name: "gh_token", Env: "GH_TOKEN", Upstream: fmt.Sprintf("https://127.0.0.1:%d", port), Header: "authorization", Phantom: phantom, Real: real, Intercept: true}
	if _, err := New(Config{AgentID: "a", Token: NewToken(), Routes: []Route{route}}); err == nil || !strings.Contains(err.Error(), "Config.CA") {
		t.Errorf("an intercepting route without a CA: %v", err)
	}
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}, RootCAs: pool, Dial: (&net.Dialer{}).DialContext, CA: ca, Routes: []Route{route}})
	trust := x509.NewCertPool()
	if !trust.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM does not parse")
	}
	u, _ := url.Parse(f.url)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: trust}}, Timeout: 10 * time.Second}
	get := func(c *http.Client, auth string) (int, string, error) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/user?x=1", port), nil)
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	for _, auth := range []string{"token " + phantom, "Bearer " + phantom} {
		if code, body, err := get(client, auth); err != nil || code != 200 || body != "upstream-ok" {
			t.Fatalf("%s: %d %q %v", strings.Fields(auth)[0], code, body, err)
		}
	}
	if code, _, err := get(client, "token sk-agent-sandbox-phantom-of-another-run"); err != nil || code != 403 {
		t.Errorf("a wrong phantom: %d %v, want 403", code, err)
	}
	if code, _, err := get(client, "token "+real); err != nil || code != 403 {
		t.Errorf("the real value from inside: %d %v, want 403", code, err)
	}
	untrusting := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
	if _, _, err := get(untrusting, "token "+phantom); err == nil {
		t.Errorf("a client that does not trust the run's CA got a connection")
	}
	mu.Lock()
	want := "GET /user?x=1 Bearer " + real
	if len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Errorf("the upstream saw %q, want %q twice", seen, want)
	}
	mu.Unlock()
	f.p.Close()
	raw, _ := os.ReadFile(AuditFile(f.dir, "test-agent"))
	if strings.Contains(string(raw), real) || strings.Contains(string(raw), phantom) {
		t.Errorf("the audit log holds a credential:\n%s", raw)
	}
	if !strings.Contains(string(raw), "credential GH_TOKEN injected") || !strings.Contains(string(raw), "answered by the broker for credential route gh_token") {
		t.Errorf("the audit log does not record the interception and the injection:\n%s", raw)
	}
}

// TestCALeaf: the CA signs a certificate per host (a name or an IP
// address) that verifies against the CA alone, for that host only.
func TestCALeaf(t *testing.T) {
	ca, err := NewCA("a", []string{"api.github.com", "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	for _, host := range []string{"api.github.com", "192.0.2.7"} {
		c, err := ca.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(c.Certificate[0])
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
			t.Errorf("%s's certificate verifies for another host", host)
		}
	}
}

// TestCANameConstraints: the run's CA carries critical name constraints
// permitting only the intercepting routes' hosts: a certificate it signs
// for any other name or address (as a stolen key would) does not verify;
// a CA limited to names admits no address and one limited to addresses no
// name; a CA for no host is refused.
func TestCANameConstraints(t *testing.T) {
	if _, err := NewCA("a", nil); err == nil {
		t.Error("a CA for no host was made")
	}
	for _, tc := range []struct {
		hosts     []string
		ok, notOK []string
	}{
		{[]string{"api.github.com"}, []string{"api.github.com"}, []string{"github.com", "evil.example", "127.0.0.1", "::1"}},
		{[]string{"127.0.0.1"}, []string{"127.0.0.1"}, []string{"127.0.0.2", "localhost", "api.github.com", "::1"}},
		{[]string{"[::1]", "ghe.example.test"}, []string{"::1", "ghe.example.test"}, []string{"::2", "127.0.0.1", "example.test"}},
	} {
		ca, err := NewCA("a", tc.hosts)
		if err != nil {
			t.Fatal(err)
		}
		crit := false
		for _, e := range ca.cert.Extensions {
			if e.Id.Equal([]int{2, 5, 29, 30}) {
				crit = e.Critical
			}
		}
		if !crit {
			t.Errorf("%v: the CA has no critical name constraints extension", tc.hosts)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.PEM)
		verify := func(host string) error {
			c, err := ca.leaf(host)
			if err != nil {
				t.Fatal(err)
			}
			leaf, _ := x509.ParseCertificate(c.Certificate[0])
			_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host})
			return err
		}
		for _, h := range tc.ok {
			if err := verify(h); err != nil {
				t.Errorf("CA for %v: %s does not verify: %v", tc.hosts, h, err)
			}
		}
		for _, h := range tc.notOK {
			if err := verify(h); err == nil {
				t.Errorf("CA for %v: a certificate it signed for %s verifies", tc.hosts, h)
			}
		}
	}
}
