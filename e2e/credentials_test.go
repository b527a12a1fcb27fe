package e2e

import (
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyStandIn is a TLS stand-in of the Messages API that records the key
// of every request and accepts only the key it was made with (401
// otherwise); its certificate is a throwaway CA that only agent-sandbox's
// broker trusts (SSL_CERT_FILE in agent-sandbox's own environment, which
// the sandbox's base environment leaves out).
type keyStandIn struct {
	*httptest.Server
	api  *apiStandIn
	mu   sync.Mutex
	keys []string
	ca   string
}

func newKeyStandIn(t *testing.T, accept string) *keyStandIn {
	s := &keyStandIn{api: &apiStandIn{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key")
		s.mu.Lock()
		s.keys = append(s.keys, key)
		s.mu.Unlock()
		if key != accept {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type": "error", "error": {"type": "authentication_error", "message": "stand-in: invalid x-api-key"}}`)
			return
		}
		s.api.serve(w, r)
	}))
	t.Cleanup(s.Close)
	s.ca = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// onlyKey fails unless seen holds at least one key, each of them want.
func onlyKey(t *testing.T, seen []string, want string) {
	t.Helper()
	for _, k := range seen {
		if k != want {
			t.Errorf("the API saw %q, not the real key", k)
		}
	}
	if len(seen) == 0 {
		t.Errorf("the API saw no request")
	}
}

func (s *keyStandIn) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.keys...)
}

// credentialsFolder is an agent folder running /bin/sh with Claude Code's
// credential: ANTHROPIC_API_KEY through ANTHROPIC_BASE_URL.
const credentialsFolder = `command = "/bin/sh"
env = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "PROBE_TRY_HEX"]

[[credentials]]
env = "ANTHROPIC_API_KEY"
base_url_env = "ANTHROPIC_BASE_URL"
upstream = "https://api.anthropic.com"
header = "x-api-key"
`

// credentialsProbe looks for the real key inside and uses the route, as
// an agent would; it prints what it found.
const credentialsProbe = `python3 - <<'PY'
import os, glob, http.client, json, urllib.parse
key = os.environ.get("ANTHROPIC_API_KEY", "")
base = urllib.parse.urlsplit(os.environ.get("ANTHROPIC_BASE_URL", ""))
print("PHANTOM=" + key)
print("BASE=" + os.environ.get("ANTHROPIC_BASE_URL", ""))
def post(k):
    c = http.client.HTTPConnection(base.hostname, base.port, timeout=20)
    c.request("POST", base.path + "/v1/messages", body=json.dumps({"model": "m", "max_tokens": 1, "messages": []}), headers={"x-api-key": k, "content-type": "application/json"})
    return c.getresponse().status
print("WITH-PHANTOM=%d" % post(key))
# The other key arrives hex-encoded, so that its text is nowhere inside.
k = bytes.fromhex(os.environ.get("PROBE_TRY_HEX", "")).decode()
if k:
    print("WITH-OTHER=%d" % post(k))
PY
for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done | grep -c "REALKEYMARK" | sed 's/^/ENVIRON-HITS=/'
grep -rIl REALKEYMARK "$HOME" "$PWD" /tmp /var/tmp /etc /dev/shm 2>/dev/null | sed 's/^/FILE-HIT=/'
true`

func TestCredentialInjection(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	real := "sk-ant-REALKEYMARK-" + strings.Repeat("7", 24)
	api := newKeyStandIn(t, real)
	port := api.Listener.Addr().(*net.TCPAddr).Port
	r := newBrokerRun(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "keyed")
	write(t, filepath.Join(folder, "agent.toml"), credentialsFolder)
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	env := []string{"ANTHROPIC_API_KEY=" + real, "ANTHROPIC_BASE_URL=" + api.URL, "SSL_CERT_FILE=" + api.ca}
	allow := fmt.Sprintf("127.0.0.1:%d", port)
	// Control: unsandboxed the agent holds the real key.
	if _, out := r.run(60*time.Second, env, "--no-sandbox", folder, "-c", `echo "KEY=$ANTHROPIC_API_KEY"`); !strings.Contains(out, "KEY="+real) {
		t.Fatalf("control: unsandboxed the key is not in the environment: %s", out)
	}
	code, out := r.run(120*time.Second, append(env, "PROBE_TRY_HEX="+hex.EncodeToString([]byte(real))), "--allow-host", allow, folder, "-c", credentialsProbe)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	phantom := checkCredentialsProbe(t, out)
	if seen := api.seen(); len(seen) != 1 || seen[0] != real {
		t.Errorf("the API saw keys %q, want the real one once", seen)
	}
	// The phantom copied out and replayed from the host is worthless:
	// the API does not take it (the broker that did has gone with its run).
	req, _ := http.NewRequest("POST", api.URL+"/v1/messages", strings.NewReader(`{"model": "m", "max_tokens": 1, "messages": []}`))
	req.Header.Set("x-api-key", phantom)
	if resp, err := api.Client().Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the phantom replayed from the host was not refused by the API: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A phantom replayed in another run is refused.
	_, out2 := r.run(120*time.Second, append(env, "PROBE_TRY_HEX="+hex.EncodeToString([]byte(phantom))), "--allow-host", allow, folder, "-c", credentialsProbe)
	if !strings.Contains(out2, "WITH-PHANTOM=200") || !strings.Contains(out2, "WITH-OTHER=403") {
		t.Errorf("another run's phantom was not refused (or this run's not accepted):\n%s", out2)
	}
	// The audit log says the key was injected, never its value.
	_, log := r.cli(30*time.Second, nil, "log", "--json", "keyed")
	if !strings.Contains(log, "credential ANTHROPIC_API_KEY injected") || strings.Contains(log, "REALKEYMARK") || strings.Contains(log, phantom) {
		t.Errorf("the audit log does not say the key was injected, or holds a value:\n%s", log)
	}
	// --dry-run shows the route and the source, never a value.
	_, dry := r.run(30*time.Second, env, "--allow-host", allow, "--dry-run", folder)
	if !strings.Contains(dry, "credential ANTHROPIC_API_KEY (source env:ANTHROPIC_API_KEY") || strings.Contains(dry, "REALKEYMARK") {
		t.Errorf("--dry-run does not show the route, or shows the key:\n%s", dry)
	}

	t.Run("claude completes a turn with its key injected", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		before := len(api.seen())
		r := newBrokerRun(t)
		code, out := r.run(120*time.Second, env, "--allow-host", allow, "claude", "-p", "Say hello.")
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want the stand-in's reply:\n%s", code, out)
		}
		onlyKey(t, api.seen()[before:], real)
	})

	t.Run("pi completes a turn with its key injected", func(t *testing.T) {
		realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
		before := len(api.seen())
		r := newBrokerRun(t)
		// Control: pi reads no ANTHROPIC_BASE_URL, so without the
		// generated extension its request would go to
		// api.anthropic.com (through the broker, which the allow list
		// refuses): the turn below reaches the stand-in only through
		// the route.
		code, out := r.run(120*time.Second, env, "--allow-host", allow, "pi", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--no-session", "-p", "Say hello.")
		if code != 0 || !strings.Contains(out, standInReply) {
			t.Fatalf("exit %d, want the stand-in's reply:\n%s", code, out)
		}
		onlyKey(t, api.seen()[before:], real)
		if _, dry := r.run(30*time.Second, env, "--allow-host", allow, "--dry-run", "pi"); !strings.Contains(dry, "pi reaches") {
			t.Errorf("--dry-run does not say how pi reaches the route:\n%s", dry)
		}
	})

	t.Run("pi cannot change the extension that routes it", func(t *testing.T) {
		// A folder whose command is named pi gets the extension too; this
		// "pi" is a script that tries what an agent would.
		r := newBrokerRun(t)
		folder := filepath.Join(filepath.Dir(r.home), "agents", "pi-probe")
		bin := filepath.Join(filepath.Dir(r.home), "bin", "pi")
		write(t, bin, `#!/bin/sh
[ "$1" = --extension ] || { echo "NO-EXTENSION-ARG $*"; exit 0; }
grep -q ANTHROPIC_BASE_URL "$2" && echo READ-OK
echo 'process.exit(0)' >> "$2" && echo WROTE
mv "$2" "$2.x" && echo MOVED
rm -f "$2" && echo REMOVED
touch "$(dirname "$2")/new.ts" && echo CREATED
true
`)
		if err := os.Chmod(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(folder, "agent.toml"), strings.Replace(credentialsFolder, `"/bin/sh"`, fmt.Sprintf("%q\nexec_paths = [\"/bin\", \"/usr/bin\"]", bin), 1))
		write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
		code, out := r.run(60*time.Second, env, "--allow-host", allow, folder)
		if code != 0 || !strings.Contains(out, "READ-OK") {
			t.Fatalf("exit %d, the script did not get a readable extension:\n%s", code, out)
		}
		for _, w := range []string{"WROTE", "MOVED", "REMOVED", "CREATED"} {
			if regexp.MustCompile(`(?m)^` + w + `$`).MatchString(out) {
				t.Errorf("the agent could change its extension (%s):\n%s", w, out)
			}
		}
	})
}

// TestCredentialInjectionGit (issue 26): a token the broker holds reaches
// a git server over HTTPS (a loopback stand-in behind TLS, serving git's
// smart HTTP with git-http-backend and accepting only the real token as
// the Basic password): the agent's git push to the server's https URL is
// rewritten to the route, git's credential helper gives the phantom, the
// broker puts the real token in its place. The push lands; the real token
// is not inside.
func TestCredentialInjectionGit(t *testing.T) {
	skipWithoutLandlock(t)
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("%s is missing: apt-get install git (.ci/run does)", backend)
	}
	root := t.TempDir()
	srv := filepath.Join(root, "srv")
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(srv, "repo.git")).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", filepath.Join(srv, "repo.git"), "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	real := "ghp_REALTOKENMARK" + strings.Repeat("9", 24)
	var mu sync.Mutex
	var passwords []string
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=agent"}}
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		mu.Lock()
		passwords = append(passwords, pass)
		mu.Unlock()
		if !ok || pass != real {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	defer server.Close()
	ca := filepath.Join(root, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "gitkeyed")
	write(t, filepath.Join(folder, "agent.toml"), fmt.Sprintf(`command = "/bin/sh"
env = ["GH_TOKEN"]

[[credentials]]
env = "GH_TOKEN"
upstream = %q
header = "basic"
git = true
`, server.URL))
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	env := []string{"GH_TOKEN=" + real, "SSL_CERT_FILE=" + ca}
	allow := strings.TrimPrefix(server.URL, "https://")
	script := `git push -q ` + server.URL + `/repo.git HEAD:refs/heads/main 2>&1 && echo PUSHED
env | grep -c REALTOKENMARK | sed 's/^/ENV-HITS=/'
echo "TOKEN=$GH_TOKEN"`
	code, out := r.run(120*time.Second, env, "--allow-host", allow, folder, "-c", script)
	if code != 0 || !strings.Contains(out, "PUSHED") {
		t.Fatalf("the push failed (exit %d):\n%s", code, out)
	}
	if !strings.Contains(out, "ENV-HITS=0") || strings.Contains(out, "REALTOKENMARK") || !strings.Contains(out, "TOKEN=sk-agent-sandbox-phantom-") {
		t.Errorf("the real token is visible inside, or the agent holds no phantom:\n%s", out)
	}
	if b, err := exec.Command("git", "-C", filepath.Join(srv, "repo.git"), "rev-parse", "refs/heads/main").CombinedOutput(); err != nil {
		t.Errorf("the push did not land on the server: %v %s", err, b)
	}
	mu.Lock()
	for _, p := range passwords {
		if p != "" && p != real {
			t.Errorf("the server saw the password %q, not the real token", p)
		}
	}
	mu.Unlock()
}

// TestCredentialDefaults (issue 26): the built-in codex, gemini and
// opencode folders' [[credentials]] defaults, with the real agents (the
// versions .ci/run installs): each agent's request reaches a TLS stand-in
// of its API through the broker's route, carrying the real key, which the
// agent never held (it had a phantom). The stand-in answers 401, so the
// agent ends with its own error; what is checked is the key each request
// carried.
func TestCredentialDefaults(t *testing.T) {
	skipWithoutLandlock(t)
	type seenReq struct{ path, key string }
	var mu sync.Mutex
	var seen []seenReq
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key") + r.Header.Get("x-goog-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, seenReq{r.URL.Path, key})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"type": "authentication_error", "code": 401, "message": "stand-in: not a real API"}}`)
	}))
	defer api.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	write(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})))
	allow := api.Listener.Addr().String()
	real := "REALKEYMARK-" + strings.Repeat("5", 24)
	for _, c := range []struct {
		agent, pkg, path string
		env, args        []string
		setup            func(home string)
	}{
		{agent: "codex", pkg: "@openai/codex@0.171.0", path: "/v1/responses",
			env:  []string{"CODEX_API_KEY=" + real, "OPENAI_BASE_URL=" + api.URL + "/v1"},
			args: []string{"exec", "--skip-git-repo-check", "Say hello."}},
		{agent: "gemini", pkg: "@google/gemini-cli@0.61.0", path: "/v1beta/models/",
			env:  []string{"GEMINI_API_KEY=" + real, "GOOGLE_GEMINI_BASE_URL=" + api.URL},
			args: []string{"--skip-trust", "-p", "Say hello."},
			setup: func(home string) {
				write(t, filepath.Join(home, ".gemini", "settings.json"), `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`)
			}},
		{agent: "opencode", pkg: "opencode-ai@1.18.33", path: "/v1/messages",
			env:  []string{"ANTHROPIC_API_KEY=" + real, "ANTHROPIC_BASE_URL=" + api.URL + "/v1"},
			args: []string{"run", "-m", "anthropic/claude-sonnet-4-5", "Say hello."}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			realAgent(t, c.agent, c.pkg)
			r := newBrokerRun(t)
			if c.setup != nil {
				c.setup(r.home)
			}
			mu.Lock()
			before := len(seen)
			mu.Unlock()
			env := append([]string{"SSL_CERT_FILE=" + ca}, c.env...)
			code, out := r.run(120*time.Second, env, append([]string{"--allow-host", allow, c.agent}, c.args...)...)
			if code == 125 {
				t.Fatalf("refused before start:\n%s", out)
			}
			mu.Lock()
			got := append([]seenReq{}, seen[before:]...)
			mu.Unlock()
			if len(got) == 0 {
				t.Fatalf("exit %d: the stand-in saw no request from %s:\n%s", code, c.agent, out)
			}
			for _, g := range got {
				if g.key != real || !strings.HasPrefix(g.path, c.path) {
					t.Errorf("the stand-in saw %s with key %q, want %s... with the real key", g.path, g.key, c.path)
				}
			}
			if strings.Contains(out, "REALKEYMARK") {
				t.Errorf("the real key is in the agent's output:\n%s", out)
			}
			if _, log := r.cli(30*time.Second, nil, "log", "--json", c.agent); !strings.Contains(log, "injected") || strings.Contains(log, "REALKEYMARK") {
				t.Errorf("the audit log does not record the injection, or holds the key:\n%s", log)
			}
		})
	}
}

// TestCredentialInjectionGH (issue 26): gh takes no base URL, so its token
// reaches the API through a route that intercepts: the broker answers
// gh's CONNECT with a certificate of a CA made for the run, which the
// sandbox's SSL_CERT_FILE trusts, and puts the real token in each
// request. The stand-in of GitHub Enterprise's API (gh's GH_HOST, on this
// machine's own non-loopback address, since Go's proxy support never
// proxies loopback; TLS with a throwaway CA that only agent-sandbox
// trusts) accepts only the real token; gh inside holds a phantom.
func TestCredentialInjectionGH(t *testing.T) {
	skipWithoutLandlock(t)
	gh, err := exec.LookPath("gh")
	if err != nil {
		t.Fatal("gh is not installed: apt-get install gh (.ci/run does)")
	}
	ip := ownAddress(t)
	real := "ghp_REALKEYMARK" + strings.Repeat("3", 24)
	var mu sync.Mutex
	var seen []string
	srv := serveAt(t, net.JoinHostPort(ip, "0"), true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, auth)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if auth != "Bearer "+real && auth != "token "+real {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message": "Bad credentials"}`)
			return
		}
		fmt.Fprintf(w, `{"login": "standin-user", "path": %q}`, r.URL.Path)
	}))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeCA(t, ca, srv)
	host := hostPort(srv)

	r := newBrokerRun(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "gh")
	write(t, filepath.Join(folder, "agent.toml"), fmt.Sprintf(`command = %q
config_paths = ["~/.config/gh"]
env = ["GH_HOST", "GH_ENTERPRISE_TOKEN"]

[[credentials]]
env = "GH_ENTERPRISE_TOKEN"
upstream = "https://%s"
header = "authorization"
intercept = true

[set_env]
GH_NO_UPDATE_NOTIFIER = "1"
`, gh, host))
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	env := []string{"GH_HOST=" + host, "GH_ENTERPRISE_TOKEN=" + real, "SSL_CERT_FILE=" + ca}
	code, out := r.run(120*time.Second, env, "--allow-host", host, folder, "api", "user")
	if code != 0 || !strings.Contains(out, "standin-user") || !strings.Contains(out, "/api/v3/user") {
		t.Fatalf("exit %d, want gh's answer from the stand-in (requests %q):\n%s", code, seen, out)
	}
	if strings.Contains(out, "REALKEYMARK") {
		t.Errorf("the real token is in gh's output:\n%s", out)
	}
	mu.Lock()
	for _, a := range seen {
		if a != "Bearer "+real {
			t.Errorf("the stand-in saw %q, not the real token", a)
		}
	}
	mu.Unlock()
	// Inside, the variable holds a phantom and SSL_CERT_FILE the run's
	// bundle (the system's roots and the run's CA); the real token is in
	// no environment there. The same folder, with a shell for gh.
	shFolder := filepath.Join(filepath.Dir(r.home), "agents", "ghsh")
	b, _ := os.ReadFile(filepath.Join(folder, "agent.toml"))
	write(t, filepath.Join(shFolder, "agent.toml"), strings.Replace(string(b), fmt.Sprintf("command = %q", gh), `command = "/bin/sh"`, 1))
	write(t, filepath.Join(shFolder, "sandbox", "nono.json"), "{}\n")
	_, probe := r.run(60*time.Second, env, "--allow-host", host, shFolder, "-c",
		`echo "TOKEN=$GH_ENTERPRISE_TOKEN"; echo "CERTS=$(grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE")"; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done | grep -c REALKEYMARK | sed 's/^/ENVIRON-HITS=/'`)
	switch {
	case strings.Contains(probe, "REALKEYMARK") || !strings.Contains(probe, "ENVIRON-HITS=0"):
		t.Errorf("the real token is visible inside:\n%s", probe)
	case !strings.Contains(probe, "TOKEN=sk-agent-sandbox-phantom-"):
		t.Errorf("GH_ENTERPRISE_TOKEN inside is not a phantom:\n%s", probe)
	case !regexp.MustCompile(`CERTS=([2-9]|\d\d+)`).MatchString(probe):
		t.Errorf("SSL_CERT_FILE inside does not hold the system's roots and the run's CA:\n%s", probe)
	}
	_, log := r.cli(30*time.Second, nil, "log", "--json", "gh")
	if !strings.Contains(log, "credential GH_ENTERPRISE_TOKEN injected") || strings.Contains(log, "REALKEYMARK") {
		t.Errorf("the audit log does not say the token was injected, or holds it:\n%s", log)
	}
}

// ownAddress is one of this machine's own non-loopback IPv4 addresses.
func ownAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address, which the test's stand-in needs (gh never proxies loopback)")
	return ""
}

// checkCredentialsProbe reads credentialsProbe's output: the agent holds
// a phantom, the real key is in no environment, /proc entry or file it
// can read, a request with the phantom reaches the API and one carrying
// the real key from inside is refused. It returns the phantom.
func checkCredentialsProbe(t *testing.T, out string) string {
	t.Helper()
	phantom := regexp.MustCompile(`PHANTOM=(\S*)`).FindStringSubmatch(out)
	switch {
	case phantom == nil || !strings.HasPrefix(phantom[1], "sk-agent-sandbox-phantom-"):
		t.Fatalf("the agent's ANTHROPIC_API_KEY is not a phantom:\n%s", out)
	case strings.Contains(out, "REALKEYMARK"), !strings.Contains(out, "ENVIRON-HITS=0"), strings.Contains(out, "FILE-HIT="):
		t.Errorf("the real key is visible inside:\n%s", out)
	case !strings.Contains(out, "WITH-PHANTOM=200"):
		t.Errorf("a request with the phantom did not reach the API:\n%s", out)
	case !strings.Contains(out, "WITH-OTHER=403"):
		t.Errorf("a request carrying the real key from inside was not refused:\n%s", out)
	}
	return phantom[1]
}
