package landlock

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Net is how the built-in engine gives the agent its network, decided
// from the run's network policy alone (NetFor): a pure value that
// --dry-run prints and Execute carries out.
//
//   - open: the host's network namespace, nothing forwarded (open_port and
//     listen_port mean nothing there: every port is reachable already).
//   - blocked: a private network namespace with only loopback, plus the
//     policy file's open_port and listen_port forwards (--offline has
//     none: it blocks everything).
//   - allowlist: the same namespace, whose one door is the egress broker
//     on 127.0.0.1:ProxyPort inside it, served by agent-sandbox (outside
//     the sandbox) with the allow list; plus the forwards.
type Net struct {
	// Mode is the posture's network mode.
	Mode posture.NetMode `json:"mode"`
	// AllowDomains is the broker's allow list (allowlist only).
	AllowDomains []string `json:"allow_domains"`
	// ProxyPort is the broker's port on the sandbox's loopback
	// (allowlist only; under the weaker sandbox the parent listens on
	// an ephemeral port of the host's loopback instead).
	ProxyPort int `json:"proxy_port,omitempty"`
	// Forward are the ports of the sandbox's loopback whose connections
	// reach the same port on the host's loopback.
	Forward []Port `json:"forward"`
	// Listen are the ports on the host's loopback whose connections
	// reach a server the agent runs on that port of its own loopback.
	Listen []Port `json:"listen"`
}

// Port is one forwarded port and the rule that asked for it.
type Port struct {
	Port int    `json:"port"`
	Why  string `json:"why"`
}

// DefaultProxyPort is the broker's port on the sandbox's loopback, unless
// a forwarded port takes it (then the next free one).
const DefaultProxyPort = 3128

// NetFor decides the engine's network for policy n. It refuses what the
// engine cannot enforce: open_port 0 (nono's "any localhost port", a
// macOS-only form) and an allow list the broker would not load.
func NetFor(n posture.Network, policyFile string) (Net, error) {
	out := Net{Mode: n.Mode, AllowDomains: []string{}, Forward: []Port{}, Listen: []Port{}}
	if n.Mode == posture.NetOpen {
		return out, nil
	}
	seen := map[int]bool{}
	addForward := func(port int, why string) {
		if !seen[port] {
			seen[port] = true
			out.Forward = append(out.Forward, Port{port, why})
		}
	}
	for _, port := range n.OpenPorts {
		if port == 0 {
			return Net{}, fmt.Errorf("%s: network.open_port 0 (any localhost port) is macOS-only in nono; the built-in engine forwards named ports only: list the ports", policyFile)
		}
		addForward(port, fmt.Sprintf("open_port %d", port))
	}
	if n.Mode == posture.NetAllowlist {
		out.AllowDomains = append(out.AllowDomains, n.AllowDomains...)
		if err := broker.CheckAllowList(n.AllowDomains); err != nil {
			return Net{}, fmt.Errorf("%s: %v", n.Source, strings.TrimPrefix(err.Error(), "broker: "))
		}
		for _, d := range n.AllowDomains {
			if port, ok := broker.LoopbackPort(d); ok {
				addForward(port, fmt.Sprintf("allow list names %s", d))
			}
		}
	}
	lseen := map[int]bool{}
	for _, port := range n.ListenPorts {
		if port == 0 {
			return Net{}, fmt.Errorf("%s: network.listen_port 0 cannot be forwarded: list the ports", policyFile)
		}
		if seen[port] {
			return Net{}, fmt.Errorf("%s: port %d is both an open_port (or a loopback host of the allow list) and a listen_port: the agent's loopback port would lead to the host and to the agent's own server at once; keep one", policyFile, port)
		}
		if !lseen[port] {
			lseen[port] = true
			out.Listen = append(out.Listen, Port{port, fmt.Sprintf("listen_port %d", port)})
		}
	}
	if n.Mode == posture.NetAllowlist {
		out.ProxyPort = DefaultProxyPort
		for seen[out.ProxyPort] || lseen[out.ProxyPort] {
			out.ProxyPort++
		}
	}
	return out, nil
}

// Reach is how a TCP connection from the agent to host:port fares under
// n: the decision the run's parts carry out (the namespace, the forwards
// init listens on at 127.0.0.1 and ::1, the broker's policy with the same
// forwarded ports), for `why --host`. weaker is the weaker sandbox (no
// namespace: Landlock's TCP rules allow the forwarded ports on every
// address).
func (n Net) Reach(host string, port int, weaker bool) (backend.HostReach, error) {
	if n.Mode == posture.NetOpen {
		return backend.HostReach{Allowed: true, Path: "host", Reason: "the network is open: the agent uses the host's network, its loopback included"}, nil
	}
	var fw, ln *Port
	for i := range n.Forward {
		if n.Forward[i].Port == port {
			fw = &n.Forward[i]
		}
	}
	for i := range n.Listen {
		if n.Listen[i].Port == port {
			ln = &n.Listen[i]
		}
	}
	forwards := "none"
	if len(n.Forward) > 0 {
		var l []string
		for _, p := range n.Forward {
			l = append(l, strconv.Itoa(p.Port))
		}
		forwards = strings.Join(l, ", ")
	}
	if broker.Direct(host) {
		// NO_PROXY sends clients here directly, onto the sandbox's own
		// loopback (the broker judges it the same way).
		r := backend.HostReach{Loopback: true, Path: "none"}
		switch {
		case fw != nil:
			r.Allowed, r.Path, r.By = true, "forward", fw.Why
			r.Reason = fmt.Sprintf("port %d of the sandbox's loopback is forwarded to the host's (%s)", port, fw.Why)
		case n.Mode == posture.NetAllowlist && !weaker && port == n.ProxyPort:
			r.Reason = fmt.Sprintf("the sandbox's 127.0.0.1:%d is the egress broker, not the host's port %d", port, port)
		case ln != nil:
			r.By = ln.Why
			r.Reason = fmt.Sprintf("port %d of the sandbox's loopback is the agent's own server (%s), which the host reaches; the host's port %d is not reachable from inside", port, ln.Why, port)
		case weaker:
			r.Reason = fmt.Sprintf("the weaker sandbox shares the host's loopback, but Landlock lets the agent connect only to the forwarded ports (%s), not to %d", forwards, port)
		case n.Mode == posture.NetAllowlist:
			r.Reason = fmt.Sprintf("inside the sandbox %s is its own loopback (a private network namespace; clients reach it directly, as NO_PROXY says, and the broker refuses it too): the host's loopback is reachable only on the forwarded ports (%s)", host, forwards)
		default:
			r.Reason = fmt.Sprintf("inside the sandbox %s is its own loopback (a private network namespace): the host's loopback is reachable only on the forwarded ports (%s)", host, forwards)
		}
		return r, nil
	}
	if weaker && fw != nil {
		return backend.HostReach{Allowed: true, Path: "port rule", By: fw.Why, Reason: fmt.Sprintf("the weaker sandbox (no network namespace) allows TCP by port number alone: port %d (%s) is open on every address", port, fw.Why)}, nil
	}
	if n.Mode == posture.NetBlocked {
		r := backend.HostReach{Path: "none", Loopback: broker.Loopback(host), Reason: "the network is blocked: the sandbox's network namespace has no route out and no DNS"}
		if weaker {
			r.Reason = "the network is blocked: Landlock refuses TCP connections"
		}
		// why --host words it "the network is blocked (from SOURCE): ...".
		if fw != nil && broker.Loopback(host) {
			r.Reason += fmt.Sprintf("; its forwarded port %d (%s) listens on 127.0.0.1 and ::1 only", port, fw.Why)
			r.Fix = fmt.Sprintf("connect to 127.0.0.1:%d or [::1]:%d, where the forwarded port listens", port, port)
		}
		return r, nil
	}
	ok, reason, err := broker.AllowedInSandbox(n.AllowDomains, n.ForwardPorts(), host, port)
	if err != nil {
		return backend.HostReach{}, err
	}
	return backend.HostReach{Allowed: ok, Path: "proxy", Reason: reason, Loopback: broker.Loopback(host)}, nil
}

// ForwardPorts are the numbers of n.Forward.
func (n Net) ForwardPorts() []int {
	var out []int
	for _, p := range n.Forward {
		out = append(out, p.Port)
	}
	return out
}

// Comments are --dry-run's lines about the network.
func (n Net) Comments() []string {
	var c []string
	switch n.Mode {
	case posture.NetBlocked:
		c = append(c, "network: a private network namespace with only loopback (no DNS, no route out)")
	case posture.NetAllowlist:
		if len(n.AllowDomains) == 0 {
			c = append(c, "network: the allow list is empty: the egress broker refuses every host")
		}
		c = append(c, fmt.Sprintf("network: a private network namespace whose one door is agent-sandbox's egress broker on 127.0.0.1:%d inside it (HTTP(S)_PROXY set, a per-run token, allow list: %s; audit log: agent-sandbox log)",
			n.ProxyPort, listOrNone(n.AllowDomains)))
	}
	for _, p := range n.Forward {
		c = append(c, fmt.Sprintf("network: the agent's localhost:%d reaches the host's localhost:%d (%s)", p.Port, p.Port, p.Why))
	}
	for _, p := range n.Listen {
		c = append(c, fmt.Sprintf("network: the host's 127.0.0.1:%d reaches the agent's server on its localhost:%d (%s)", p.Port, p.Port, p.Why))
	}
	return c
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// proxyEnvShown is the proxy environment as --dry-run prints it: the
// token is made per run, so the plan shows a placeholder.
func (n Net) proxyEnvShown() []string {
	if n.Mode != posture.NetAllowlist {
		return nil
	}
	return broker.ProxyEnv(broker.ProxyURL("<per-run-token>", n.ProxyPort))
}

// withEnv replaces or adds the KEY=VALUE entries of add in env.
func withEnv(env, add []string) []string {
	out := slices.Clone(env)
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		out = append(out, kv)
	}
	return out
}

// netSession is the host side of one run's network: the egress broker
// (allowlist) and the forwarded ports, all audited by one broker.Proxy.
type netSession struct {
	net   Net
	proxy *broker.Proxy
	token string
	// listen are the host listeners of Net.Listen, opened before the
	// start so that a port already taken refuses the run.
	listen []net.Listener
	warn   io.Writer
	// routes are the credentials the broker injects; conf is each one's
	// configuration, by route name.
	routes []broker.Route
	conf   map[string]spec.Credential
	// caFile is the agent's trust bundle when a route intercepts.
	caFile string
	// announce tells the user of each refused destination at once.
	announce *announcer
}

// newNetSession opens what the run's network needs on the host: nil when
// the network is open. A blocked network without ports gets one too: its
// audit records the connections the agent attempts in vain (direct).
func newNetSession(n Net, agentID, auditDir string, expected []string, routes []broker.Route, conf map[string]spec.Credential, ca *broker.CA, caFile string, warn io.Writer) (*netSession, error) {
	if n.Mode == posture.NetOpen {
		return nil, nil
	}
	token := broker.NewToken()
	an := newAnnouncer(warn, agentID)
	p, err := broker.New(broker.Config{
		AgentID: agentID, Allow: n.AllowDomains, Token: token, AuditDir: auditDir,
		SandboxLoopback: true, Forwarded: n.ForwardPorts(), Routes: routes, CA: ca,
		Warn:     func(msg string) { diag.Warnf(warn, "%s", msg) },
		Refused:  an.refused,
		Expected: expected,
	})
	if err != nil {
		return nil, err
	}
	s := &netSession{net: n, proxy: p, token: token, warn: warn, routes: routes, conf: conf, caFile: caFile, announce: an}
	for _, port := range n.Listen {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port.Port))
		if err != nil {
			s.close(false)
			return nil, fmt.Errorf("%s: cannot listen on the host's 127.0.0.1:%d for the agent's server: %v", port.Why, port.Port, err)
		}
		s.listen = append(s.listen, l)
	}
	return s, nil
}

// setTerminal tells the announcer the agent's stdout (announcer).
func (s *netSession) setTerminal(stdout any) {
	if s != nil {
		s.announce.setTerminal(stdout)
	}
}

// env is the proxy environment for a broker on 127.0.0.1:port.
func (s *netSession) env(port int) []string {
	if s == nil || s.net.Mode != posture.NetAllowlist {
		return nil
	}
	env := broker.ProxyEnv(broker.ProxyURL(s.token, port))
	for _, r := range s.routes {
		env = append(env, r.Env+"="+r.Phantom)
		if r.BaseEnv != "" {
			env = append(env, fmt.Sprintf("%s=http://127.0.0.1:%d/%s", r.BaseEnv, port, r.Name))
		}
	}
	if s.caFile != "" {
		for _, k := range caEnv {
			env = append(env, k+"="+s.caFile)
		}
	}
	return append(env, gitEnv(s.routes, s.conf, port)...)
}

// args is argv with the routes' base_url_args for a broker on
// 127.0.0.1:port.
func (s *netSession) args(argv []string, port int) []string {
	if s == nil {
		return argv
	}
	return routeArgs(argv, s.routes, s.conf, port)
}

// serveProxy serves the broker on l.
func (s *netSession) serveProxy(l net.Listener) {
	go func() { _ = s.proxy.Serve(l) }()
}

// serveForward relays the connections of l (the agent's localhost:port)
// to the host's loopback port.
func (s *netSession) serveForward(l net.Listener, p Port) {
	go func() {
		_ = s.proxy.ServeForward(l, broker.Forward{
			Method: broker.MethodForward, Host: "localhost", Port: p.Port, Reason: p.Why,
			Dial: func(ctx context.Context) (net.Conn, error) { return dialLoopback(ctx, p.Port) },
		})
	}()
}

// serveInbound relays the connections of the host listeners to the
// agent's servers, through dial (a connection inside the sandbox, or
// the host's loopback when the sandbox shares it).
func (s *netSession) serveInbound(dial func(ctx context.Context, port int) (net.Conn, error)) {
	for i, l := range s.listen {
		p := s.net.Listen[i]
		go func() {
			_ = s.proxy.ServeForward(l, broker.Forward{
				Method: broker.MethodInbound, Host: "localhost", Port: p.Port, Reason: p.Why,
				Dial: func(ctx context.Context) (net.Conn, error) { return dial(ctx, p.Port) },
			})
		}()
	}
}

// close ends every connection, writes the last audit lines and, when
// report is set, prints the broker's end-of-run line (connections it
// refused, and how to allow them).
func (s *netSession) close(report bool) {
	if s == nil {
		return
	}
	for _, l := range s.listen {
		l.Close()
	}
	_ = s.proxy.Close()
	s.announce.end()
	if msg := s.proxy.Summary().Message(); report && msg != "" {
		fmt.Fprintln(s.warn, msg)
	}
}

// recordDirect records a connection attempt the view saw lead nowhere
// (view.Process.Attempted).
func (s *netSession) recordDirect(addr string) {
	if s == nil {
		return
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		s.proxy.RecordDirect(ap)
	}
}

// unrecordedDirect counts the attempts the view saw lead nowhere but did
// not report, past the first thousand destinations
// (view.Process.Unrecorded).
func (s *netSession) unrecordedDirect(n int64) {
	if s == nil {
		return
	}
	s.proxy.UnrecordedDirect(n)
}

// dialLoopback connects to the host's 127.0.0.1:port, or [::1]:port
// when nothing answers on IPv4.
func dialLoopback(ctx context.Context, port int) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err == nil {
		return c, nil
	}
	if c6, err6 := d.DialContext(ctx, "tcp", fmt.Sprintf("[::1]:%d", port)); err6 == nil {
		return c6, nil
	}
	return nil, err
}
