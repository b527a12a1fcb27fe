package broker

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxHeaderBytes bounds a request's line and header block.
const maxHeaderBytes = 64 << 10

// Audit decisions.
const (
	DecisionAllowed = "allowed" // admitted; bytes and duration follow
	DecisionRefused = "refused" // refused by the policy or for the token (403, 407, 400)
	DecisionFailed  = "failed"  // admitted by the policy, but resolving or connecting failed (502, 504)
)

// request is the parsed head of one proxy request.
type request struct {
	req    *http.Request
	target target
	method string
	// route: an origin-form request (/ROUTE/...) for a credential route;
	// tls: its upstream speaks TLS.
	route, tls bool
	// scrub, on a routed request, replaces the real key in the response
	// by the phantom.
	scrub *scrubber
}

// readRequest reads one request head from br and parses its target. A
// CONNECT needs authority form (HOST:PORT); any other method needs an
// absolute http:// URL (port 80 by default). The returned request is
// non-nil whenever a request line was read, even with an error, so that
// the caller can log what was asked.
func readRequest(br *bufio.Reader) (*request, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	r := &request{req: req, method: req.Method}
	var hostport string
	defport := 0
	if req.Method == http.MethodConnect {
		if req.URL == nil || req.URL.Scheme != "" || req.URL.Path != "" || req.URL.User != nil || req.URL.Host == "" {
			return r, errors.New("CONNECT needs a HOST:PORT target")
		}
		hostport = req.URL.Host
	} else {
		if req.URL != nil && !req.URL.IsAbs() && strings.HasPrefix(req.URL.Path, "/") && req.URL.Host == "" {
			r.route = true // a credential route decides (Proxy.route)
			return r, nil
		}
		if req.URL == nil || !req.URL.IsAbs() {
			return r, errors.New("not a proxy request: the target must be an absolute http:// URL (or use CONNECT)")
		}
		if req.URL.Scheme != "http" {
			return r, fmt.Errorf("scheme %q is not proxied as plain HTTP: use CONNECT for https", req.URL.Scheme)
		}
		if req.URL.User != nil {
			return r, errors.New("user information in the URL is not forwarded")
		}
		hostport = req.URL.Host
		defport = 80
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		if defport == 0 || strings.HasSuffix(hostport, ":") {
			r.target.host = hostport
			return r, fmt.Errorf("bad target %q: need HOST:PORT", sanitize(hostport))
		}
		host, portStr = hostport, strconv.Itoa(defport)
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	r.target.host = host
	port, err := parsePort(portStr)
	if err != nil {
		return r, fmt.Errorf("bad target %q: %v", sanitize(hostport), err)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // SplitHostPort removed the brackets of an IPv6 literal
	}
	t, err := parseTarget(host, port)
	t.host = r.target.host
	r.target = t
	if err != nil {
		return r, fmt.Errorf("bad host %q: %v", sanitize(r.target.host), err)
	}
	return r, nil
}

// authorized reports whether req carries the token.
func (p *Proxy) authorized(req *http.Request) bool {
	v := req.Header.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(ProxyUser))
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(p.cfg.Token))
	return ok && userOK&passOK == 1
}

// attempt is one connection attempt on its way to the audit log.
type attempt struct {
	start     time.Time
	method    string
	host      string
	port      int
	address   string
	decision  string
	reason    string
	up, down  int64
	refusedAs string // key in Summary.RefusedHosts
	// injected names the variable whose real value a credential route
	// put in the request (the audit says so, never the value).
	injected string
}

// Keys of attempt.refusedAs for refusals that name no host.
const (
	refusedAuth      = "\x00auth"
	refusedMalformed = "\x00malformed"
)

// maxUnauthenticatedLines bounds the audit lines a run writes for
// requests without the token or that could not be read: anything that
// can reach the proxy's port can send them, so past this they are only
// counted (Summary).
const maxUnauthenticatedLines = 16

// Bounds of the untrusted text an audit line holds.
const (
	maxAuditHost   = 255
	maxAuditReason = 512
)

// expectedRefusal says whether a is a refusal Config.Expected names, and
// then notes it in a's reason.
func (p *Proxy) expectedRefusal(a *attempt) bool {
	switch {
	case a.decision != DecisionRefused, a.refusedAs == "", a.refusedAs == refusedAuth, a.refusedAs == refusedMalformed:
		return false
	case !p.isExpected(a):
		return false
	}
	a.reason += expectedNote
	return true
}

// countRefused counts a policy refusal in the summary (p.mu held) and
// reports whether its destination is refused for the first time.
func (p *Proxy) countRefused(a *attempt) bool {
	p.sum.Refused++
	_, seen := p.sum.RefusedHosts[a.refusedAs]
	if seen || len(p.sum.RefusedHosts) < maxRefusedHosts {
		p.sum.RefusedHosts[a.refusedAs]++
	} else {
		p.sum.RefusedHosts[otherHosts]++
	}
	return !seen
}

func (p *Proxy) record(a *attempt) {
	expected := p.expectedRefusal(a)
	p.mu.Lock()
	noHost := false
	switch {
	case expected:
		p.sum.Expected++
	case a.decision == DecisionAllowed:
		p.sum.Allowed++
	case a.decision == DecisionRefused && a.refusedAs == refusedAuth:
		p.sum.Unauthenticated++
		noHost = true
	case a.decision == DecisionRefused && a.refusedAs == refusedMalformed:
		p.sum.Malformed++
		noHost = true
	case a.decision == DecisionRefused && a.refusedAs != "":
		if p.countRefused(a) && p.cfg.Refused != nil {
			defer p.cfg.Refused(a.refusedAs, a.reason)
		}
	}
	write := p.audit != nil
	if write && noHost {
		p.unauthLines++
		write = p.unauthLines <= maxUnauthenticatedLines
	}
	if !write && p.audit != nil {
		p.sum.Unlogged++
	}
	p.mu.Unlock()
	if !write {
		return
	}
	e := Entry{
		Time:       a.start.UTC(),
		Agent:      p.cfg.AgentID,
		Method:     a.method,
		Host:       clip(a.host, maxAuditHost),
		Port:       a.port,
		Address:    a.address,
		Decision:   a.decision,
		Reason:     clip(a.reason+injectedNote(a.injected), maxAuditReason),
		BytesUp:    a.up,
		BytesDown:  a.down,
		DurationMS: time.Since(a.start).Milliseconds(),
	}
	if noHost {
		// Before the token is checked nothing the client sent is
		// recorded but that it came.
		e.Method, e.Host, e.Port, e.Address = "", "", 0, ""
	}
	if n, err := p.audit.writeBudget(&e, p.cfg.AuditRunBytes); err != nil {
		p.warn(fmt.Sprintf("egress broker: cannot write the audit log: %v", err))
	} else if n == 0 {
		p.mu.Lock()
		p.sum.Unlogged++
		p.mu.Unlock()
	}
}

// injectedNote is the audit's words for a credential injected (never its
// value).
func injectedNote(env string) string {
	if env == "" {
		return ""
	}
	return "; credential " + env + " injected by the broker (its value is never logged)"
}

// clip bounds s to n bytes, saying how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("...(%d bytes)", len(s))
}

// enter counts a connection being served and reports whether it is over
// Config.MaxConns; leave ends it.
func (p *Proxy) enter() (over bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active++
	return p.active > p.cfg.MaxConns
}

func (p *Proxy) leave() {
	p.mu.Lock()
	p.active--
	p.mu.Unlock()
}

// handle serves one client connection: one CONNECT, or a keep-alive
// sequence of plain HTTP requests.
func (p *Proxy) handle(c net.Conn) {
	over := p.enter()
	defer p.leave()
	lr := &io.LimitedReader{R: c, N: maxHeaderBytes}
	br := bufio.NewReaderSize(lr, 4096)
	for first := true; ; first = false {
		lr.N = maxHeaderBytes
		_ = c.SetReadDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
		if _, err := br.Peek(1); err != nil {
			if !first || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return // closed between requests, or a bare connect-and-close
			}
		}
		a := &attempt{start: time.Now()}
		r, err := readRequest(br)
		if r != nil {
			a.method, a.host, a.port = r.method, r.target.host, r.target.port
		}
		if err != nil {
			a.decision = DecisionRefused
			status := http.StatusBadRequest
			switch {
			case r == nil && lr.N <= 0:
				a.reason = "request header too large"
				status = http.StatusRequestHeaderFieldsTooLarge
			case r == nil && isTimeout(err):
				a.reason = "no complete request header within the handshake timeout"
				status = http.StatusRequestTimeout
			case r == nil:
				a.reason = "malformed request: " + err.Error()
			default:
				a.reason = err.Error()
			}
			a.refusedAs = refusedMalformed
			p.record(a)
			writeRefusal(c, status, a.reason)
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		lr.N = math.MaxInt64 // a request body or tunnel is not a header
		if r.route {
			// The route's phantom authenticates it (a client with a base
			// URL sends no proxy token).
			if over {
				a.decision, a.reason = DecisionRefused, fmt.Sprintf("too many concurrent connections (limit %d)", p.cfg.MaxConns)
				p.record(a)
				writeRefusal(c, http.StatusServiceUnavailable, a.reason)
				return
			}
			if !p.route(c, br, r, a) {
				return
			}
			continue
		}
		if !p.authorized(r.req) {
			a.decision, a.reason, a.refusedAs = DecisionRefused, "missing or wrong proxy token", refusedAuth
			p.record(a)
			writeRefusal(c, http.StatusProxyAuthRequired, "missing or wrong proxy token (use the proxy URL from HTTPS_PROXY, with its user and token)")
			return
		}
		if over {
			a.decision, a.reason = DecisionRefused, fmt.Sprintf("too many concurrent connections (limit %d)", p.cfg.MaxConns)
			p.record(a)
			writeRefusal(c, http.StatusServiceUnavailable, a.reason)
			return
		}
		if r.method == http.MethodConnect {
			p.connect(c, br, r, a)
			return
		}
		if !p.forward(c, br, r, a) {
			return
		}
	}
}

// decide applies the policy to a target and resolves it. On refusal it
// returns the HTTP status and a reason.
func (p *Proxy) decide(ctx context.Context, t target, a *attempt) ([]netip.Addr, int) {
	v := p.checkPolicy(t)
	if !v.ok {
		a.decision, a.reason = DecisionRefused, v.reason
		if t.port == SSHPort {
			a.reason = SSHRefusal + " (" + v.reason + ")"
		}
		a.refusedAs = refusalKey(t, v)
		return nil, http.StatusForbidden
	}
	var addrs []netip.Addr
	if t.ip.IsValid() {
		addrs = []netip.Addr{t.ip}
	} else {
		ips, err := p.cfg.Resolver.LookupIPAddr(ctx, t.name)
		if err != nil || len(ips) == 0 {
			a.decision = DecisionFailed
			a.reason = fmt.Sprintf("cannot resolve %s: %v", t.name, err)
			if err == nil {
				a.reason = fmt.Sprintf("cannot resolve %s: no addresses", t.name)
			}
			return nil, http.StatusBadGateway
		}
		for _, ip := range ips {
			ad, ok := netip.AddrFromSlice(ip.IP)
			if !ok {
				continue
			}
			addrs = append(addrs, ad.Unmap())
		}
	}
	for _, ad := range addrs {
		why := checkAddr(ad, v.exact)
		if why == "" && !v.exact && p.own().has(ad) {
			why = fmt.Sprintf("resolved address %s is this machine's own, admitted only for a host the list names exactly (a wildcard must not reach the host's services)", ad)
		}
		if why != "" {
			a.decision, a.reason, a.address = DecisionRefused, why, ad.String()
			a.refusedAs = refusalKey(t, v)
			return nil, http.StatusForbidden
		}
	}
	a.reason = v.reason
	return addrs, 0
}

func refusalKey(t target, v verdict) string {
	h := t.name
	if h == "" {
		h = t.ip.String()
		if t.ip.Is6() {
			h = "[" + h + "]"
		}
	}
	if strings.HasPrefix(v.reason, "port ") {
		h += ":" + strconv.Itoa(t.port)
	}
	return h
}

// dial connects to the first of the checked addresses that answers.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port int, a *attempt) (net.Conn, int) {
	var lastErr error
	for _, ad := range addrs {
		ap := netip.AddrPortFrom(ad, uint16(port)).String()
		a.address = ap
		c, err := p.cfg.Dial(ctx, "tcp", ap)
		if err == nil {
			return c, 0
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	a.decision = DecisionFailed
	a.reason = fmt.Sprintf("cannot connect: %v", lastErr)
	if ctx.Err() != nil || isTimeout(lastErr) {
		return nil, http.StatusGatewayTimeout
	}
	return nil, http.StatusBadGateway
}

// upstream decides, resolves and dials; on failure it answers the client
// and records the attempt, and returns nil.
func (p *Proxy) upstream(c net.Conn, r *request, a *attempt) net.Conn {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, status := p.decide(ctx, r.target, a)
	if status == 0 {
		var up net.Conn
		up, status = p.dial(ctx, addrs, r.target.port, a)
		if status == 0 {
			if !p.track(up) {
				up.Close()
				a.decision, a.reason = DecisionFailed, "proxy closing"
				p.record(a)
				return nil
			}
			return up
		}
	}
	p.record(a)
	writeRefusal(c, status, a.reason)
	return nil
}

// connect serves a CONNECT request: dial, answer 200, relay.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, r *request, a *attempt) {
	if rt := p.routeForHost(r.target); rt != nil && rt.Intercept {
		p.intercept(c, br, r, a, rt)
		return
	} else if rt != nil {
		// A tunnel would carry the agent's key past the route, which
		// injects it: the client must use the route.
		a.decision, a.refusedAs = DecisionRefused, r.target.host
		a.reason = fmt.Sprintf("CONNECT to %s, which credential route %s serves: the agent must send its requests there (%s=http://127.0.0.1:PORT/%s, set for it); a client that ignores %s gets no key", r.target.host, rt.Name, rt.BaseEnv, rt.Name, rt.BaseEnv)
		p.record(a)
		writeRefusal(c, http.StatusForbidden, "refused: "+a.reason)
		return
	}
	up := p.upstream(c, r, a)
	if up == nil {
		return
	}
	defer p.untrack(up, true)
	a.decision = DecisionAllowed
	defer p.record(a)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := br.Buffered(); n > 0 {
		// Bytes the client sent right after the request head.
		b, _ := br.Peek(n)
		w, err := up.Write(b)
		a.up += int64(w)
		if err != nil {
			return
		}
	}
	up2, down := p.tunnel(c, up)
	a.up += up2
	a.down += down
}

// spliceOK turns on kernel-side copying between TCP connections
// (spliceStep); spliceChunk bounds one copy call.
var (
	spliceOK    = canSplice && os.Getenv("AGENT_SANDBOX_BROKER_NOSPLICE") == ""
	spliceChunk = int64(4 << 20)
)

// errNoPipe: spliceStep found no pipe to copy through (the process is out
// of descriptors); the copy goes on in user space.
var errNoPipe = errors.New("no pipe to splice through")

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// tunnelState is shared by the two directions of a tunnel.
type tunnelState struct {
	last     atomic.Int64 // unix nanoseconds of the last byte moved either way
	halfOpen atomic.Int64 // deadline after one side finished; 0 while both send
}

// tunnel relays bytes both ways until both sides finished, the tunnel was
// idle for IdleTimeout, or one side finished more than HalfOpenTimeout ago.
func (p *Proxy) tunnel(client, up net.Conn) (upBytes, downBytes int64) {
	st := &tunnelState{}
	st.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	var clientErr error
	go func() {
		defer close(done)
		downBytes, clientErr = p.pipe(client, up, st)
	}()
	var err error
	upBytes, err = p.pipe(up, client, st)
	if err != nil {
		client.Close()
		up.Close()
	}
	<-done
	if clientErr != nil {
		client.Close()
		up.Close()
	}
	return upBytes, downBytes
}

var (
	errIdle     = errors.New("idle timeout")
	errHalfOpen = errors.New("half-open timeout")
)

// pipe copies src to dst. When src finishes it half-closes dst and
// shortens the read deadline of dst, which the other direction reads from,
// to the half-open timeout. It returns nil when src finished cleanly.
func (p *Proxy) pipe(dst, src net.Conn, st *tunnelState) (int64, error) {
	var dl readDeadline
	var total int64
	dtc, ok1 := dst.(*net.TCPConn)
	stc, ok2 := src.(*net.TCPConn)
	if ok1 && ok2 && spliceOK {
		n, userSpace, err := p.pipeSplice(dtc, stc, st, &dl)
		if !userSpace {
			return n, err
		}
		total = n
	}
	return p.pipeCopy(dst, src, st, &dl, total)
}

// readDeadline is the read deadline pipe keeps on its source: the idle
// timeout, refreshed as bytes move, or the half-open timeout once the
// other direction has finished.
type readDeadline struct {
	setAt   time.Time
	setHalf int64
}

// refresh moves src's read deadline to the half-open deadline when one is
// set, or else to the idle timeout from now when the last one was set
// more than an eighth of it ago.
func (d *readDeadline) refresh(src net.Conn, st *tunnelState, idle time.Duration) {
	now := time.Now()
	if h := st.halfOpen.Load(); h != 0 {
		if h != d.setHalf {
			_ = src.SetReadDeadline(time.Unix(0, h))
			d.setHalf = h
		}
	} else if now.Sub(d.setAt) > idle/8 {
		_ = src.SetReadDeadline(now.Add(idle))
		d.setAt = now
	}
}

// halfClose passes the end of src on: dst is half-closed and the other
// direction, which reads from dst, gets the half-open deadline.
func (p *Proxy) halfClose(dst net.Conn, st *tunnelState) {
	closeWrite(dst)
	h := time.Now().Add(p.cfg.HalfOpenTimeout)
	st.halfOpen.CompareAndSwap(0, h.UnixNano())
	_ = dst.SetReadDeadline(time.Unix(0, st.halfOpen.Load()))
}

// pipeSplice is pipe's kernel-side copy, in bounded steps so that
// deadlines are refreshed between them. userSpace says it stopped for
// want of descriptors, having copied total, and the copy goes on in user
// space.
func (p *Proxy) pipeSplice(dst, src *net.TCPConn, st *tunnelState, dl *readDeadline) (total int64, userSpace bool, err error) {
	idle := p.cfg.IdleTimeout
	// Kernel-side copy in bounded steps, so that deadlines are
	// refreshed between them; activity is recorded as bytes move.
	moved := func() { st.last.Store(time.Now().UnixNano()) }
	for {
		dl.refresh(src, st, idle)
		n, eof, err := spliceStep(dst, src, spliceChunk, moved)
		total += n
		if n > 0 {
			st.last.Store(time.Now().UnixNano())
		}
		if eof {
			p.halfClose(dst, st)
			return total, false, nil
		}
		if err == nil {
			continue
		}
		if errors.Is(err, errNoPipe) {
			return total, true, nil // out of descriptors: on in user space
		}
		if isTimeout(err) {
			if st.halfOpen.Load() != 0 {
				return total, false, errHalfOpen
			}
			if n > 0 || time.Since(time.Unix(0, st.last.Load())) < idle {
				dl.setAt = time.Time{}
				continue
			}
			return total, false, errIdle
		}
		return total, false, err
	}
}

// pipeCopy is pipe's copy through a buffer in user space, counting on
// from total.
func (p *Proxy) pipeCopy(dst, src net.Conn, st *tunnelState, dl *readDeadline, total int64) (int64, error) {
	idle := p.cfg.IdleTimeout
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		dl.refresh(src, st, idle)
		n, err := src.Read(buf)
		if n > 0 {
			st.last.Store(time.Now().UnixNano())
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			p.halfClose(dst, st)
			return total, nil
		}
		if isTimeout(err) {
			if st.halfOpen.Load() != 0 {
				return total, errHalfOpen
			}
			if time.Since(time.Unix(0, st.last.Load())) < idle {
				dl.setAt = time.Time{} // the other direction is busy: wait on
				continue
			}
			return total, errIdle
		}
		return total, err
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// writeRefusal answers with status and a short text body naming the
// reason, and asks the client to close.
func writeRefusal(w io.Writer, status int, reason string) {
	body := "agent-sandbox egress broker: " + sanitize(reason) + "\n"
	var extra string
	if status == http.StatusProxyAuthRequired {
		extra = "Proxy-Authenticate: Basic realm=\"agent-sandbox\"\r\n"
	}
	if c, ok := w.(net.Conn); ok {
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		defer c.SetWriteDeadline(time.Time{})
	}
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, statusPhrase(status, reason), extra, len(body), body)
}

// maxPhrase bounds the reason in a refusal's status line.
const maxPhrase = 400

// statusPhrase is the reason phrase of a refusal's status line: the
// status text, then the reason, since a CONNECT client shows the status
// line and nothing else (OpenBSD nc: `Proxy error: "HTTP/1.1 403 ..."`,
// corkscrew, ncat, curl -v); printable ASCII only, bounded.
func statusPhrase(status int, reason string) string {
	r := []byte(sanitize(reason))
	for i, c := range r {
		if c < 0x20 || c > 0x7e {
			r[i] = '?'
		}
	}
	if len(r) > maxPhrase {
		r = append(r[:maxPhrase-3], "..."...)
	}
	return http.StatusText(status) + " (agent-sandbox: " + string(r) + ")"
}

// SSHPort is ssh's port; a refused connection to it gets SSHRefusal.
const SSHPort = 22

// SSHRefusal says why ssh (git over an ssh remote) cannot work in the
// sandbox and what does today; it leads the reason of a refused
// connection to port 22, through the proxy or past it.
const SSHRefusal = "ssh (port 22) does not work in the sandbox: it has no ssh key (~/.ssh is not granted) and no agent socket, so it could not log in even where the host is allowed; use the HTTPS remote (git remote set-url origin https://HOST/OWNER/REPO.git) with a credential route that injects the token (agent.toml [[credentials]] with git = true; README, \"Credentials the agent never holds\"), or push from the host after the run"
