package broker

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; tests inject their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Config configures a Proxy. Zero durations take the defaults named on
// each field.
type Config struct {
	// AgentID names the agent in audit lines and the audit file
	// (<AuditDir>/<AgentID>.jsonl): letters, digits, '.', '_', '-'.
	AgentID string
	// Allow is the allow list (nono allow_domain and --allow-host entries;
	// grammar in the package comment). An empty list admits nothing.
	Allow []string
	// Deny entries (nono deny_domain) are checked before Allow.
	Deny []string
	// SandboxLoopback says that the agent's loopback is its own (the
	// sandbox's network namespace, or the weaker sandbox's Landlock port
	// rules): a loopback target (localhost, 127.0.0.0/8, ::1) is then
	// admitted on the Forwarded ports only, whatever Allow says, so that
	// a client sending it through the proxy reaches what a direct
	// connection reaches (NO_PROXY sends clients there directly). A run
	// sets it; tests of the proxy alone may not.
	SandboxLoopback bool
	// Forwarded are the ports the run forwards from the agent's loopback
	// to the host's (open_port, loopback HOST:PORT entries of Allow).
	Forwarded []int
	// Token is the per-run secret every request must carry as
	// Proxy-Authorization: Basic base64("agent-sandbox:" + Token).
	// NewToken makes one. At least 16 characters of [A-Za-z0-9_-].
	Token string
	// AuditDir is the audit directory, normally
	// $XDG_STATE_HOME/agent-sandbox/audit (created 0700). Empty: no audit
	// file (tests and benchmarks only; a run must set it).
	AuditDir string
	// AuditMaxBytes bounds the audit file: when a line would make it
	// larger, it is renamed to <AgentID>.jsonl.1 (replacing the previous
	// one) and a new file is started. Default 10 MiB.
	AuditMaxBytes int64
	// AuditRunBytes bounds what one run writes to the audit file, so
	// that a run cannot rotate its own record (or the record before it)
	// away: past it, entries are counted, not written, and one line at
	// Close says how many. Default AuditMaxBytes/2.
	AuditRunBytes int64
	// Resolver resolves names; default net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address ("tcp", "IP:PORT"); default a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// HandshakeTimeout bounds reading a request header, and waiting for
	// the next request on a kept-alive plain HTTP connection. Default 10 s.
	HandshakeTimeout time.Duration
	// DialTimeout bounds resolving and connecting upstream. Default 30 s.
	DialTimeout time.Duration
	// IdleTimeout closes a tunnel (or a plain HTTP exchange) when no byte
	// has moved in either direction for this long. Default 10 min.
	IdleTimeout time.Duration
	// HalfOpenTimeout closes a tunnel this long after one side finished
	// sending, when the other has not. Default 30 s.
	HalfOpenTimeout time.Duration
	// MaxConns bounds concurrent client connections; more are answered
	// 503. Default 4096.
	MaxConns int
	// Warn receives warnings (an audit write failing); default prints
	// "agent-sandbox: warning: ..." on stderr.
	Warn func(msg string)
	// Refused, when set, is told each destination the run refuses (the
	// key of Summary.RefusedHosts: a host, or HOST:PORT) with the reason,
	// the first time it is refused and at once, so that the user learns
	// of it while the agent retries rather than when the run ends. It is
	// called outside the broker's lock, from the connection's goroutine.
	Refused func(dest, reason string)
	// Expected are refusals the agent folder expects (agent.toml
	// expected_refusals), in the allow list's grammar: a refused
	// connection one of them matches is still refused and logged, but
	// counted as Summary.Expected, not warned of (neither Refused nor
	// the end-of-run line). They never admit anything.
	Expected []string
	// Routes are the credentials the broker injects ([Route]): requests
	// to /NAME/... on the proxy's port, authenticated by the phantom.
	Routes []Route
	// CA answers the CONNECTs of the routes that intercept
	// (Route.Intercept); nil when none does.
	CA *CA
	// RootCAs verify the routes' https upstreams; nil: the system's
	// (SSL_CERT_FILE and SSL_CERT_DIR are honoured).
	RootCAs *x509.CertPool
	// OwnAddrs lists this machine's own addresses (every interface's,
	// IPv4 and IPv6), which a host admitted by a wildcard entry must not
	// resolve to; default net.InterfaceAddrs, read again at most every
	// ownAddrsTTL.
	OwnAddrs func() ([]net.Addr, error)
}

// Proxy is the egress proxy of one run. It is safe for concurrent use.
type Proxy struct {
	cfg Config
	// policy is replaced, never changed, by AllowAdd (under polMu).
	polMu  sync.RWMutex
	policy *policy
	// expected are Config.Expected, parsed.
	expected []entry
	audit    *auditLog

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	active    int
	sum       Summary
	warned    bool
	// unauthLines counts the malformed and unauthenticated requests
	// (maxUnauthenticatedLines).
	unauthLines int
	// ownSet and ownAt cache Config.OwnAddrs.
	ownSet addrSet
	ownAt  time.Time

	wg sync.WaitGroup
	// ctx ends with Close, cancelling resolutions and dials under way.
	ctx    context.Context
	cancel context.CancelFunc
}

// New checks cfg and returns a Proxy. A bad allow or deny entry is an
// error naming the entry; so is a bad token or agent ID, or an audit file
// that cannot be opened.
func New(cfg Config) (*Proxy, error) {
	pol, err := newPolicy(cfg.Allow, cfg.Deny)
	if err != nil {
		return nil, fmt.Errorf("broker: %v", err)
	}
	var expected []entry
	for _, x := range cfg.Expected {
		e, err := parseEntry(x)
		if err != nil {
			return nil, fmt.Errorf("broker: expected refusal %q: %v", x, err)
		}
		expected = append(expected, e)
	}
	if cfg.SandboxLoopback {
		pol.sandboxLoopback(cfg.Forwarded)
	}
	if err := checkRoutes(cfg.Routes, cfg.CA); err != nil {
		return nil, err
	}
	if err := checkToken(cfg.Token); err != nil {
		return nil, err
	}
	if cfg.AuditDir != "" || cfg.AgentID != "" {
		if err := checkAgentID(cfg.AgentID); err != nil {
			return nil, err
		}
	}
	if cfg.AuditMaxBytes <= 0 {
		cfg.AuditMaxBytes = 10 << 20
	}
	if cfg.OwnAddrs == nil {
		cfg.OwnAddrs = net.InterfaceAddrs
	}
	if cfg.AuditRunBytes <= 0 {
		cfg.AuditRunBytes = cfg.AuditMaxBytes / 2
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.HandshakeTimeout, 10*time.Second)
	def(&cfg.DialTimeout, 30*time.Second)
	def(&cfg.IdleTimeout, 10*time.Minute)
	def(&cfg.HalfOpenTimeout, 30*time.Second)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 4096
	}
	if cfg.Warn == nil {
		cfg.Warn = func(msg string) { fmt.Fprintf(os.Stderr, "agent-sandbox: warning: %s\n", msg) }
	}
	p := &Proxy{
		cfg:       cfg,
		policy:    pol,
		expected:  expected,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		sum:       Summary{Agent: cfg.AgentID, RefusedHosts: map[string]int{}},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.AuditDir != "" {
		a, err := openAudit(cfg.AuditDir, cfg.AgentID, cfg.AuditMaxBytes)
		if err != nil {
			return nil, err
		}
		p.audit = a
	}
	return p, nil
}

func checkToken(t string) error {
	if len(t) < 16 {
		return errors.New("broker: the proxy token must have at least 16 characters (use broker.NewToken)")
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return errors.New("broker: the proxy token may hold only letters, digits, '-' and '_' (use broker.NewToken)")
		}
	}
	return nil
}

func checkAgentID(id string) error {
	if id == "" || id[0] == '.' || len(id) > 200 {
		return fmt.Errorf("broker: agent ID %q is not usable as a file name (letters, digits, '.', '_', '-'; not starting with '.')", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("broker: agent ID %q is not usable as a file name (letters, digits, '.', '_', '-'; not starting with '.')", id)
		}
	}
	return nil
}

// NewToken returns a fresh random token (256 bits, hex).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

// ProxyUser is the user name in the proxy URL and Proxy-Authorization.
const ProxyUser = "agent-sandbox"

// ProxyURL returns the proxy URL the agent uses:
// http://agent-sandbox:TOKEN@127.0.0.1:PORT.
func ProxyURL(token string, port int) string {
	return "http://" + ProxyUser + ":" + token + "@127.0.0.1:" + strconv.Itoa(port)
}

// NoProxy is the NO_PROXY value set for the agent: loopback only.
const NoProxy = "localhost,127.0.0.1,::1"

// ProxyEnv returns the environment entries (KEY=VALUE) that point an
// agent's HTTP clients at url: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
// their lower-case forms, NO_PROXY/no_proxy (loopback only) and
// NODE_USE_ENV_PROXY=1 (Node's built-in fetch and http honour the
// variables only with it).
func ProxyEnv(url string) []string {
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+url, strings.ToLower(k)+"="+url)
	}
	return append(env, "NO_PROXY="+NoProxy, "no_proxy="+NoProxy, "NODE_USE_ENV_PROXY=1")
}

// Serve accepts connections on l and serves them until Close (then it
// returns nil) or until Accept fails for good (then it returns that
// error). Serve may be called for several listeners.
func (p *Proxy) Serve(l net.Listener) error {
	return p.serve(l, p.handle)
}

// serve accepts connections on l and runs handle for each, tracked so that
// Close ends them.
func (p *Proxy) serve(l net.Listener, handle func(net.Conn)) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return nil
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c, true)
			handle(c)
		}()
	}
}

// track registers a connection so that Close can end it. It reports false
// when the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn, closeIt bool) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	if closeIt {
		c.Close()
	}
}

// Close stops every listener given to Serve, ends every connection and
// tunnel, waits for their handlers to finish (each writes its audit line)
// and closes the audit file.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	for l := range p.listeners {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.audit != nil {
		if s := p.Summary(); s.DirectUnrecorded > 0 {
			_ = p.audit.write(&Entry{Time: time.Now().UTC(), Agent: p.cfg.AgentID, Method: MethodDirect, Decision: DecisionRefused,
				Reason: fmt.Sprintf("%d further connection attempts past the proxy not recorded one by one (past the first %d destinations the sandbox reports)", s.DirectUnrecorded, maxDirectReported)})
		}
		if s := p.Summary(); s.Unlogged > 0 {
			// Past the run's budget: one line says what is missing.
			_ = p.audit.write(&Entry{Time: time.Now().UTC(), Agent: p.cfg.AgentID, Decision: DecisionRefused,
				Reason: fmt.Sprintf("%d further attempts of this run not logged (malformed, without the proxy token, or past the %d bytes one run may write); counted in the run's summary", s.Unlogged, p.cfg.AuditRunBytes)})
		}
		return p.audit.close()
	}
	return nil
}

// maxRefusedHosts bounds the hosts Summary.RefusedHosts names; the rest
// count under otherHosts.
const maxRefusedHosts = 1000

// otherHosts is the RefusedHosts key of the hosts past maxRefusedHosts.
const otherHosts = "(other hosts)"

// Summary counts the decisions of a run, for the line printed when it
// ends.
type Summary struct {
	// Agent is Config.AgentID.
	Agent string
	// Allowed counts connections (tunnels and plain HTTP requests) the
	// policy admitted.
	Allowed int
	// Refused counts requests refused by the policy (403).
	Refused int
	// RefusedHosts maps each refused host (as the client named it, lower
	// case, with ":PORT" when the refusal was about the port) to its count.
	RefusedHosts map[string]int
	// Expected counts refused requests the agent folder expects
	// (Config.Expected): logged, not warned of.
	Expected int
	// Unauthenticated counts requests without the right token (407).
	Unauthenticated int
	// Malformed counts requests that could not be read (400, 408, 431).
	Malformed int
	// Unlogged counts the attempts not written to the audit log: the
	// malformed and unauthenticated ones past the first
	// maxUnauthenticatedLines, and any past Config.AuditRunBytes.
	Unlogged int
	// DirectUnrecorded counts connections attempted past the proxy that
	// the sandbox did not report one by one (UnrecordedDirect); they are
	// in Refused too, under no host.
	DirectUnrecorded int64
}

// maxDirectReported is how many distinct destinations the namespace
// view reports (its init's bound), for the messages.
const maxDirectReported = 1000

// Summary returns a copy of the counts so far.
func (p *Proxy) Summary() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sum
	s.RefusedHosts = make(map[string]int, len(p.sum.RefusedHosts))
	for k, v := range p.sum.RefusedHosts {
		s.RefusedHosts[k] = v
	}
	return s
}

// Message is the end-of-run line for stderr, or "" when nothing was
// refused. It names up to five hosts, most refused first, and says how to
// allow them.
func (s Summary) Message() string {
	if s.Refused == 0 && s.Unauthenticated == 0 && s.Malformed == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("agent-sandbox: warning: the egress broker refused ")
	if s.Refused > 0 {
		hosts := make([]string, 0, len(s.RefusedHosts))
		for h := range s.RefusedHosts {
			hosts = append(hosts, h)
		}
		sort.Slice(hosts, func(i, j int) bool {
			a, c := s.RefusedHosts[hosts[i]], s.RefusedHosts[hosts[j]]
			if a != c {
				return a > c
			}
			return hosts[i] < hosts[j]
		})
		fmt.Fprintf(&b, "%d %s (", s.Refused, plural(s.Refused, "connection", "connections"))
		for i, h := range hosts {
			if i == 5 {
				fmt.Fprintf(&b, ", %d more %s", len(hosts)-5, plural(len(hosts)-5, "host", "hosts"))
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s ×%d", sanitize(h), s.RefusedHosts[h])
		}
		b.WriteString(")")
		if s.Unauthenticated > 0 {
			b.WriteString(" and ")
		}
	}
	if s.Unauthenticated > 0 {
		fmt.Fprintf(&b, "%d %s without the proxy token", s.Unauthenticated, plural(s.Unauthenticated, "request", "requests"))
	}
	if s.Malformed > 0 {
		if s.Refused > 0 || s.Unauthenticated > 0 {
			b.WriteString(" and ")
		}
		fmt.Fprintf(&b, "%d malformed %s", s.Malformed, plural(s.Malformed, "request", "requests"))
	}
	if s.Unlogged > 0 {
		fmt.Fprintf(&b, " (%d of them not in the audit log: past what one run may write there)", s.Unlogged)
	}
	if s.DirectUnrecorded > 0 {
		fmt.Fprintf(&b, " (%d of them attempts past the proxy not recorded one by one: past the first %d destinations)", s.DirectUnrecorded, maxDirectReported)
	}
	b.WriteString("; to allow a host, add --allow-host HOST (or allow_domain in the agent's sandbox/nono.json)")
	if s.Agent != "" {
		fmt.Fprintf(&b, "; details: agent-sandbox log %s", s.Agent)
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sanitize drops control characters from untrusted text (host names sent
// by the agent) before it reaches a terminal.
// isExpected says whether a refused attempt is one Config.Expected names.
func (p *Proxy) isExpected(a *attempt) bool {
	if len(p.expected) == 0 {
		return false
	}
	t, err := parseTarget(strings.TrimSuffix(strings.TrimPrefix(a.host, "["), "]"), a.port)
	if err != nil {
		return false
	}
	for i := range p.expected {
		if p.expected[i].matches(t.name, t.ip, t.port) {
			return true
		}
	}
	return false
}

// expectedNote ends the audit reason of an expected refusal.
const expectedNote = "; expected by the agent folder (agent.toml expected_refusals): logged, not warned of"

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, s)
}

func (p *Proxy) warn(msg string) {
	p.mu.Lock()
	first := !p.warned
	p.warned = true
	p.mu.Unlock()
	if first {
		p.cfg.Warn(msg)
	}
}
