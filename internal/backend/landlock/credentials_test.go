package landlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TestCredentialRoutes: a credential gets a route (a fresh phantom, the
// real value from its source) only with an allow list and a value; the
// caller's own base URL wins over the folder's upstream; a missing file is
// a note, a failing command a refusal naming the key and the source.
func TestCredentialRoutes(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := func(env, src string) spec.Credential {
		return spec.Credential{Env: env, BaseURLEnv: env + "_BASE", Upstream: "https://api.example.com", Header: "x-api-key", Source: src}
	}
	s := spec.Spec{AgentID: "a", Home: dir, Credentials: []spec.Credential{
		cred("FROM_ENV", "env:FROM_ENV"), cred("UNSET", "env:UNSET"), cred("FROM_FILE", "file:"+keyFile),
		cred("NO_FILE", "file:~/missing"), cred("FROM_CMD", "command:printf 'sk-from-cmd\\n'"),
	}}
	env := map[string]string{"FROM_ENV": "sk-from-env", "FROM_ENV_BASE": "http://localhost:8080/custom"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if rs, _, _, _ := credentialRoutes(s, Net{Mode: posture.NetBlocked}, lookup); len(rs) != 0 {
		t.Errorf("routes without an allow list: %v", rs)
	}
	rs, _, notes, err := credentialRoutes(s, Net{Mode: posture.NetAllowlist}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rs {
		got[r.Env] = r.Real + " " + r.Upstream
		if !strings.HasPrefix(r.Phantom, phantomPrefix) || r.Phantom == r.Real {
			t.Errorf("%s: phantom %q", r.Env, r.Phantom)
		}
	}
	want := map[string]string{
		"FROM_ENV":  "sk-from-env http://localhost:8080/custom",
		"FROM_FILE": "sk-from-file https://api.example.com",
		"FROM_CMD":  "sk-from-cmd https://api.example.com",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("routes %v", got)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "NO_FILE") {
		t.Errorf("notes %q", notes)
	}
	s.Read = []string{dir}
	s.Credentials = []spec.Credential{cred("GRANTED", "file:"+keyFile)}
	if _, _, _, err := credentialRoutes(s, Net{Mode: posture.NetAllowlist}, lookup); err == nil || !strings.Contains(err.Error(), "which the agent is granted") {
		t.Errorf("a key file inside a grant: %v", err)
	}
	s.Read = nil
	s.Credentials = []spec.Credential{cred("BAD", "command:exit 3")}
	if _, _, _, err := credentialRoutes(s, Net{Mode: posture.NetAllowlist}, lookup); err == nil || !strings.Contains(err.Error(), "BAD") || !strings.Contains(err.Error(), "command:exit 3") {
		t.Errorf("a failing command: %v", err)
	}
}

// TestRouteArgs: base_url_args go right after the command, {base_url}
// replaced by the route's URL; a route without them changes nothing.
func TestRouteArgs(t *testing.T) {
	routes := []broker.Route{{Name: "codex_api_key"}, {Name: "other"}}
	conf := map[string]spec.Credential{
		"codex_api_key": {BaseURLArgs: []string{"-c", `openai_base_url="{base_url}"`}},
		"other":         {},
	}
	got := routeArgs([]string{"/usr/bin/codex", "exec", "hi"}, routes, conf, 3128)
	want := []string{"/usr/bin/codex", "-c", `openai_base_url="http://127.0.0.1:3128/codex_api_key"`, "exec", "hi"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("routeArgs = %q, want %q", got, want)
	}
	if got := routeArgs([]string{"sh"}, routes[1:], conf, 3128); len(got) != 1 {
		t.Errorf("a route without base_url_args changed argv: %q", got)
	}
}

// TestPiRoutes: a pi run with a route gets the routes extension in the
// state dir, naming the folder's upstream and the caller's; another agent
// or a run without routes gets none.
func TestPiRoutes(t *testing.T) {
	dir := t.TempDir()
	cred := spec.Credential{Env: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL", Upstream: "https://api.anthropic.com/", Header: "x-api-key"}
	routes := []broker.Route{{Name: cred.Route(), BaseEnv: "ANTHROPIC_BASE_URL", Upstream: "https://127.0.0.1:8443"}}
	s := spec.Spec{AgentID: "pi", StateDir: dir, Argv: []string{"/usr/bin/pi"}, Credentials: []spec.Credential{cred}}
	path, err := piRoutes(s, routes, map[string]spec.Credential{cred.Route(): cred})
	if err != nil || path != filepath.Join(dir, "pi", "credential-routes.ts") {
		t.Fatalf("piRoutes = %q, %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `[["https://api.anthropic.com","ANTHROPIC_BASE_URL"],["https://127.0.0.1:8443","ANTHROPIC_BASE_URL"]]`) {
		t.Errorf("the extension does not name both upstreams (%v):\n%s", err, b)
	}
	s.AgentID, s.Argv = "claude", []string{"/usr/bin/claude"}
	if path, _ := piRoutes(s, routes, map[string]spec.Credential{cred.Route(): cred}); path != "" {
		t.Errorf("claude got a pi extension: %s", path)
	}
	s.AgentID = "pi"
	if path, _ := piRoutes(s, nil, nil); path != "" {
		t.Errorf("a run without routes got an extension: %s", path)
	}
}

// TestRunCA: a route that intercepts gets the run's CA and a trust bundle
// in the state dir holding the caller's roots (SSL_CERT_FILE first) and
// the CA's certificate; no route that intercepts, no CA.
func TestRunCA(t *testing.T) {
	dir := t.TempDir()
	roots := filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(roots, []byte("-----BEGIN CERTIFICATE-----\nSYSTEMROOTS\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec.Spec{AgentID: "a", StateDir: dir}
	lookup := func(k string) (string, bool) { return roots, k == "SSL_CERT_FILE" }
	if ca, file, _, err := runCA(s, []broker.Route{{Name: "x"}}, lookup); ca != nil || file != "" || err != nil {
		t.Errorf("no route intercepts, yet: %v %q %v", ca, file, err)
	}
	ca, file, warning, err := runCA(s, []broker.Route{{Name: "gh_token", Upstream: "https://api.github.com", Intercept: true}}, lookup)
	if err != nil || ca == nil || warning != "" || filepath.Dir(file) != filepath.Join(dir, "ca") {
		t.Fatalf("runCA = %v %q %q %v", ca, file, warning, err)
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.HasPrefix(string(b), "-----BEGIN CERTIFICATE-----\nSYSTEMROOTS") || !strings.HasSuffix(string(b), string(ca.PEM)) {
		t.Errorf("the bundle is not the roots and the CA (%v):\n%s", err, b)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the bundle's mode: %v %v", st, err)
	}
}
