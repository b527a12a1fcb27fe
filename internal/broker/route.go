package broker

import (
	"bufio"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Route is one credential the broker injects: the agent sends its
// requests to http://<proxy>/<Name>/... with Phantom where the API wants
// its key, and the broker forwards them to Upstream with the real value
// (Real) in its place. The real value is never in the sandbox, nor in the
// audit log.
type Route struct {
	// Name is the route's first path segment (letters, digits, '-', '_').
	Name string
	// Env is the agent's variable the phantom is in (for messages).
	Env string
	// BaseEnv is the variable that points the agent at the route (for
	// the refusal of a CONNECT to Upstream's host).
	BaseEnv string
	// Upstream is the API's base URL (https://api.anthropic.com); its
	// host must pass the allow list like any other.
	Upstream string
	// Header carries the key: "authorization" (as "Bearer <key>"),
	// "basic" (Authorization: Basic, the key as the password: git over
	// HTTPS; a request without it is answered 401 so that git asks its
	// credential helper), or a header holding the key alone (x-api-key,
	// x-goog-api-key).
	Header string
	// Phantom is the value the agent holds; Real the one sent upstream.
	Phantom, Real string
	// Intercept: a CONNECT to Upstream's host is answered by the broker
	// with Config.CA's certificate for it, and the requests inside are
	// served as requests to the route (for a client that takes no base
	// URL: gh). Without it such a CONNECT is refused.
	Intercept bool
}

// bearer says whether the route's header is Authorization: Bearer.
func (r *Route) bearer() bool { return strings.EqualFold(r.Header, "authorization") }

// basic says whether the key is the password of Authorization: Basic.
func (r *Route) basic() bool { return strings.EqualFold(r.Header, "basic") }

// credential returns the key the request carries in the route's header.
func (r *Route) credential(h http.Header) string {
	if r.basic() {
		req := http.Request{Header: h}
		_, pass, ok := req.BasicAuth()
		if !ok {
			return ""
		}
		return pass
	}
	v := h.Get(r.Header)
	if r.bearer() {
		// "token" is GitHub's older scheme (gh sends it).
		scheme, cred, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
			return ""
		}
		return strings.TrimSpace(cred)
	}
	return v
}

// set puts the real key in the route's header.
func (r *Route) set(h http.Header) {
	if r.basic() {
		req := http.Request{Header: h}
		user, _, _ := req.BasicAuth()
		req.SetBasicAuth(user, r.Real)
		return
	}
	if r.bearer() {
		h.Set(r.Header, "Bearer "+r.Real)
		return
	}
	h.Set(r.Header, r.Real)
}

// checkRoutes validates Config.Routes (ca: Config.CA).
func checkRoutes(rs []Route, ca *CA) error {
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Name == "" || strings.Trim(r.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" || seen[r.Name] {
			return fmt.Errorf("broker: route name %q: want a unique name of letters, digits, '-' and '_'", r.Name)
		}
		seen[r.Name] = true
		u, err := url.Parse(r.Upstream)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fmt.Errorf("broker: route %s: upstream %q: want an http(s) URL without user information", r.Name, r.Upstream)
		}
		if r.Header == "" || len(r.Phantom) < 16 || r.Real == "" || r.Phantom == r.Real {
			return fmt.Errorf("broker: route %s: needs a header, a phantom of at least 16 characters and a real value that differs", r.Name)
		}
		if r.Intercept && (ca == nil || u.Scheme != "https" || strings.Trim(u.Path, "/") != "") {
			return fmt.Errorf("broker: route %s: intercepts, so it needs Config.CA and an https upstream without a path", r.Name)
		}
	}
	return nil
}

// routeFor returns the route a request path names and the rest of the
// path, or nil.
func (p *Proxy) routeFor(reqPath string) (*Route, string) {
	name, rest, _ := strings.Cut(strings.TrimPrefix(reqPath, "/"), "/")
	for i := range p.cfg.Routes {
		if p.cfg.Routes[i].Name == name {
			return &p.cfg.Routes[i], "/" + rest
		}
	}
	return nil, ""
}

// routeForHost returns the route whose upstream is host:port, or nil.
func (p *Proxy) routeForHost(t target) *Route {
	for i := range p.cfg.Routes {
		if UpstreamAt(p.cfg.Routes[i].Upstream, t.host, t.port) {
			return &p.cfg.Routes[i]
		}
	}
	return nil
}

// UpstreamAt says whether the upstream URL's host and port (by default
// the scheme's) are host:port: a CONNECT there is the route's business.
func UpstreamAt(upstream, host string, port int) bool {
	u, err := url.Parse(upstream)
	if err != nil {
		return false
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return strings.EqualFold(u.Hostname(), strings.Trim(host, "[]")) && p == strconv.Itoa(port)
}

// route serves a request to a credential route: the phantom checked and
// replaced by the real value, the request forwarded to the upstream (over
// TLS for https). It reports whether the client connection may carry
// another request.
func (p *Proxy) route(c net.Conn, br *bufio.Reader, r *request, a *attempt) bool {
	rt, rest := p.routeFor(r.req.URL.Path)
	if rt == nil {
		a.decision, a.reason, a.refusedAs = DecisionRefused, "not a proxy request, and no credential route has that name", refusedMalformed
		p.record(a)
		writeRefusal(c, http.StatusBadRequest, "not a proxy request: the target must be an absolute http:// URL (or use CONNECT), or /ROUTE/... of a credential route")
		return false
	}
	u, _ := url.Parse(rt.Upstream)
	a.method, a.host = "ROUTE "+r.req.Method, u.Hostname()
	if m := strings.ToUpper(r.req.Method); m == "TRACE" || m == "TRACK" {
		// The upstream would echo the request, the real key with it.
		a.decision, a.reason, a.refusedAs = DecisionRefused, fmt.Sprintf("%s on route %s: refused (the upstream would echo the request with the real value of %s)", r.req.Method, rt.Name, rt.Env), rt.Env+" (TRACE)"
		p.record(a)
		writeRefusal(c, http.StatusMethodNotAllowed, "refused: "+a.reason)
		return false
	}
	got := rt.credential(r.req.Header)
	if got == "" && rt.basic() {
		// git asks its credential helper only after a 401.
		a.decision, a.reason, a.refusedAs = DecisionRefused, fmt.Sprintf("route %s: no credential yet (401, for git's credential helper)", rt.Name), ""
		p.record(a)
		_, _ = io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"agent-sandbox\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return false
	}
	switch {
	case got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(rt.Real)) == 1:
		a.decision, a.reason, a.refusedAs = DecisionRefused, fmt.Sprintf("the real value of %s was sent from inside the sandbox (route %s): refused, and not forwarded", rt.Env, rt.Name), rt.Env+" (wrong credential)"
		p.record(a)
		writeRefusal(c, http.StatusForbidden, fmt.Sprintf("refused: this request carries the real value of %s, which the sandbox must not hold", rt.Env))
		return false
	case subtle.ConstantTimeCompare([]byte(got), []byte(rt.Phantom)) != 1:
		a.decision, a.reason, a.refusedAs = DecisionRefused, fmt.Sprintf("missing or wrong %s for route %s (only this run's value is accepted)", rt.Env, rt.Name), rt.Env+" (wrong credential)"
		p.record(a)
		writeRefusal(c, http.StatusForbidden, fmt.Sprintf("refused: the request does not carry this run's %s", rt.Env))
		return false
	}
	agentHeader := r.req.Header.Get("Authorization")
	rt.set(r.req.Header)
	r.scrub = routeScrubber(rt, agentHeader, r.req.Header)
	target := *u
	target.Path = routePath(u.Path, rest)
	target.RawQuery = r.req.URL.RawQuery
	port := target.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[target.Scheme]
	}
	pn, _ := strconv.Atoi(port)
	host := target.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	t, err := parseTarget(host, pn)
	if err != nil {
		a.decision, a.reason = DecisionFailed, fmt.Sprintf("route %s: upstream %v", rt.Name, err)
		p.record(a)
		writeRefusal(c, http.StatusBadGateway, a.reason)
		return false
	}
	t.host = target.Hostname()
	a.port = pn
	r.target = t
	r.req.URL = &target
	r.tls = target.Scheme == "https"
	a.injected = rt.Env
	return p.forward(c, br, r, a)
}

// routePath is the upstream path of a request to a route: rest (the path
// after /ROUTE) cleaned as a rooted path, so that no ".." climbs out of the
// upstream's base path, below base; a trailing slash is kept.
func routePath(base, rest string) string {
	p := path.Join("/", base, path.Join("/", rest))
	if strings.HasSuffix(rest, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// wrapTLS is the upstream connection of a route to an https upstream.
func (p *Proxy) wrapTLS(up net.Conn, host string) (net.Conn, error) {
	tc := tls.Client(up, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, RootCAs: p.cfg.RootCAs})
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, nil
}
