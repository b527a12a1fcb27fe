package landlock

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/atomicfile"
	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/piext"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// phantomPrefix starts every phantom credential: recognisable in a leak
// report, and worthless outside its run.
const phantomPrefix = "sk-agent-sandbox-phantom-"

// credentialRoutes reads the real value of each of the run's credentials
// (agent.toml [[credentials]]) from its source and makes its broker
// route, with a phantom for the agent: only with an allow list, where the
// broker is the agent's only way out. A credential whose variable source
// is unset (the user logs in otherwise) or whose file is missing has no
// route, and is said in notes; a command that fails refuses the run.
// conf is each route's credential as configured, by route name (git,
// arguments).
func credentialRoutes(s spec.Spec, n Net, lookup func(string) (string, bool)) (routes []broker.Route, conf map[string]spec.Credential, notes []string, err error) {
	conf = map[string]spec.Credential{}
	if n.Mode != posture.NetAllowlist {
		return nil, conf, nil, nil
	}
	for _, c := range s.Credentials {
		if p, ok := strings.CutPrefix(c.Source, "file:"); ok {
			if p == "~" || strings.HasPrefix(p, "~/") {
				p = filepath.Join(s.Home, strings.TrimPrefix(p, "~"))
			}
			for _, g := range append(append([]string{}, s.Read...), s.Writable()...) {
				if g != "" && (p == g || strings.HasPrefix(p, g+"/")) {
					return nil, nil, nil, fmt.Errorf("%s: credentials %s: source %q lies in %s, which the agent is granted: it would read the real value there; keep the key outside every grant", agentTomlOf(s), c.Env, c.Source, g)
				}
			}
		}
		real, note, err := readSource(c.Source, s.Home, lookup)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: credentials %s: source %q: %v", agentTomlOf(s), c.Env, c.Source, err)
		}
		if real == "" {
			if note != "" {
				notes = append(notes, fmt.Sprintf("credential %s: %s; the agent gets none", c.Env, note))
			}
			continue
		}
		routes = append(routes, broker.Route{Name: c.Route(), Env: c.Env, BaseEnv: c.BaseURLEnv,
			Upstream: c.UpstreamFor(lookup), Header: c.Header, Phantom: phantomPrefix + broker.NewToken(), Real: real, Intercept: c.Intercept})
		conf[c.Route()] = c
	}
	return routes, conf, notes, nil
}

// routeArgs adds each route's base_url_args right after argv[0]
// (baseURLArgs).
func routeArgs(argv []string, routes []broker.Route, conf map[string]spec.Credential, port int) []string {
	var add []string
	for _, r := range routes {
		add = append(add, baseURLArgs(conf[r.Name].BaseURLArgs, r.Name, port)...)
	}
	if len(add) == 0 || len(argv) == 0 {
		return argv
	}
	return append(append([]string{argv[0]}, add...), argv[1:]...)
}

// baseURLArgs are base_url_args with "{base_url}" replaced by the URL of
// route on the broker at port.
func baseURLArgs(args []string, route string, port int) []string {
	var out []string
	for _, a := range args {
		out = append(out, strings.ReplaceAll(a, "{base_url}", fmt.Sprintf("http://127.0.0.1:%d/%s", port, route)))
	}
	return out
}

// gitEnv points the agent's git at the routes that serve git, through
// git's environment configuration (GIT_CONFIG_COUNT, _KEY_n, _VALUE_n):
// the https remotes under each upstream are rewritten to the route
// (url.<route>/.insteadOf) and a credential helper for the route gives
// the phantom (from the agent's own variable) as the password.
func gitEnv(routes []broker.Route, conf map[string]spec.Credential, port int) []string {
	var kv [][2]string
	for _, r := range routes {
		if !conf[r.Name].Git {
			continue
		}
		route := fmt.Sprintf("http://127.0.0.1:%d/%s", port, r.Name)
		kv = append(kv,
			[2]string{"url." + route + "/.insteadOf", r.Upstream + "/"},
			[2]string{"credential." + route + ".helper", fmt.Sprintf(`!f() { test "$1" = get && printf 'username=x-access-token\npassword=%%s\n' "$%s"; }; f`, r.Env)},
		)
	}
	if len(kv) == 0 {
		return nil
	}
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(kv))}
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return env
}

// readSource reads a credential's real value: env:NAME, file:PATH (~/
// expanded; the first line) or command:CMD (/bin/sh -c, the first line
// of its output, 30 s at most). "" with a note when there is none.
func readSource(src, home string, lookup func(string) (string, bool)) (string, string, error) {
	kind, arg, _ := strings.Cut(src, ":")
	switch kind {
	case "env":
		v, _ := lookup(arg)
		return strings.TrimSpace(v), "", nil
	case "file":
		p := arg
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return "", p + " does not exist", nil
		}
		if err != nil {
			return "", "", err
		}
		return firstLine(string(b)), "", nil
	case "command":
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", arg)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", "", fmt.Errorf("the command failed: %v", err)
		}
		v := firstLine(string(out))
		if v == "" {
			return "", "", fmt.Errorf("the command printed nothing")
		}
		return v, "", nil
	}
	return "", "", fmt.Errorf("want env:NAME, file:PATH or command:CMD")
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return strings.TrimSpace(sc.Text())
	}
	return ""
}

// agentTomlOf names the folder's agent.toml in messages.
func agentTomlOf(s spec.Spec) string {
	if s.AgentDir == "" {
		return "agent " + s.AgentID + " (built-in) agent.toml"
	}
	return filepath.Join(s.AgentDir, "agent.toml")
}

// credentialComments are --dry-run's lines for the run's credentials:
// routes and sources, never values.
func credentialComments(s spec.Spec, n Net) []string {
	var out []string
	for _, c := range s.Credentials {
		if n.Mode != posture.NetAllowlist {
			out = append(out, fmt.Sprintf("credential %s: NOT injected (the broker injects credentials only with an allow list); the agent gets the real value if its env list names it", c.Env))
			continue
		}
		line := fmt.Sprintf("credential %s (source %s, when it has a value): the agent gets a per-run phantom", c.Env, c.Source)
		if c.BaseURLEnv != "" {
			line += fmt.Sprintf(" and %s=http://127.0.0.1:%d/%s (a %s the caller set wins as the upstream)", c.BaseURLEnv, n.ProxyPort, c.Route(), c.BaseURLEnv)
		}
		if c.Intercept {
			line += fmt.Sprintf("; a CONNECT to %s is answered by the broker with a CA made for the run (%s point at the system's roots plus that CA)", strings.TrimPrefix(c.Upstream, "https://"), strings.Join(caEnv, ", "))
		}
		if c.Git {
			line += fmt.Sprintf("; git's https remotes under %s/ go to http://127.0.0.1:%d/%s/, with a credential helper giving the phantom", c.Upstream, n.ProxyPort, c.Route())
		}
		if len(c.BaseURLArgs) > 0 {
			line += fmt.Sprintf("; the command gets %q after its name", baseURLArgs(c.BaseURLArgs, c.Route(), n.ProxyPort))
		}
		if c.BaseURLEnv != "" && piext.IsPi(s) {
			line += fmt.Sprintf("; pi reaches the route through the extension %s (generated, read-only: pi reads no %s)", piRoutesPath(s), c.BaseURLEnv)
		}
		line += fmt.Sprintf("; the broker puts the real value in %s and forwards to %s", c.Header, c.Upstream)
		out = append(out, line)
	}
	return out
}

// piRoutes points pi at the run's credential routes: pi reads no base-URL
// variable, so for a pi run with routes it writes the routes extension
// (piext.RoutesSource) to the state dir, which the agent cannot write,
// and returns its path for `--extension` and a read-only grant; "" when
// the run needs none.
func piRoutes(s spec.Spec, routes []broker.Route, conf map[string]spec.Credential) (string, error) {
	var rs []piext.Route
	for _, r := range routes {
		if r.BaseEnv == "" {
			continue
		}
		// pi's built-in models name the configured upstream; a caller's
		// own endpoint (the route's upstream then) may be in models.json.
		if up := strings.TrimSuffix(conf[r.Name].Upstream, "/"); up != r.Upstream {
			rs = append(rs, piext.Route{Upstream: up, BaseEnv: r.BaseEnv})
		}
		rs = append(rs, piext.Route{Upstream: r.Upstream, BaseEnv: r.BaseEnv})
	}
	if len(rs) == 0 || !piext.IsPi(s) {
		return "", nil
	}
	path := piRoutesPath(s)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, []byte(piext.RoutesSource(rs)), 0o644)
}

// piRoutesPath is where piRoutes writes pi's routes extension.
func piRoutesPath(s spec.Spec) string {
	return filepath.Join(grant.Canonical(s.StateDir), "pi", "credential-routes.ts")
}

// caBundles are where distributions keep the system's CA bundle, first
// match wins (after the caller's SSL_CERT_FILE).
var caBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Arch, NixOS
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine, macOS
}

// caEnv are the variables that point the agent's TLS clients at the run's
// bundle: OpenSSL, Go and Python (SSL_CERT_FILE), Node (added to its own
// roots), git (GnuTLS or OpenSSL), curl, Python requests.
var caEnv = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"}

// runCA makes the run's CA when a route intercepts (Credential.Intercept)
// and writes the agent's trust bundle, the system's roots and the CA's
// certificate, to a fresh file in the state dir (the agent cannot write
// there; granted read-only, removed after the run). nil and "" when no
// route intercepts; warning is said when no system bundle was found (the
// agent then trusts only the run's CA).
func runCA(s spec.Spec, routes []broker.Route, lookup func(string) (string, bool)) (ca *broker.CA, bundle, warning string, err error) {
	if !slices.ContainsFunc(routes, func(r broker.Route) bool { return r.Intercept }) {
		return nil, "", "", nil
	}
	var hosts []string
	for _, r := range routes {
		if u, perr := url.Parse(r.Upstream); perr == nil && r.Intercept {
			hosts = append(hosts, u.Hostname())
		}
	}
	if ca, err = broker.NewCA(s.AgentID, hosts); err != nil {
		return nil, "", "", err
	}
	var system []byte
	candidates := caBundles
	if v, ok := lookup("SSL_CERT_FILE"); ok && v != "" {
		candidates = append([]string{v}, caBundles...)
	}
	for _, c := range candidates {
		if b, err := os.ReadFile(c); err == nil && len(b) > 0 {
			system = append(b, '\n')
			break
		}
	}
	if system == nil {
		warning = "no system CA bundle found (" + strings.Join(caBundles, ", ") + "): the agent trusts only this run's CA for HTTPS"
	}
	dir := filepath.Join(grant.Canonical(s.StateDir), "ca")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", "", err
	}
	f, err := os.CreateTemp(dir, "run-*.pem")
	if err != nil {
		return nil, "", "", err
	}
	_, err = f.Write(append(system, ca.PEM...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, "", "", err
	}
	return ca, f.Name(), warning, nil
}
