package broker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver maps names to addresses and counts lookups.
type fakeResolver struct {
	mu    sync.Mutex
	m     map[string][]string
	calls int
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	var out []net.IPAddr
	for _, s := range r.m[host] {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// recDialer records the addresses dialled.
type recDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *recDialer) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

type fixture struct {
	p     *Proxy
	addr  string
	url   string
	token string
	dir   string
	dial  *recDialer
	res   *fakeResolver
}

func startProxy(t testing.TB, cfg Config) *fixture {
	t.Helper()
	f := &fixture{token: NewToken(), dir: t.TempDir(), dial: &recDialer{}}
	if cfg.Token == "" {
		cfg.Token = f.token
	}
	f.token = cfg.Token
	if cfg.AgentID == "" {
		cfg.AgentID = "test-agent"
	}
	if cfg.AuditDir == "" {
		cfg.AuditDir = filepath.Join(f.dir, "audit")
	}
	f.dir = cfg.AuditDir
	if cfg.Dial == nil {
		cfg.Dial = f.dial.dial
	}
	if r, ok := cfg.Resolver.(*fakeResolver); ok {
		f.res = r
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	f.p = p
	f.addr = l.Addr().String()
	f.url = ProxyURL(f.token, l.Addr().(*net.TCPAddr).Port)
	return f
}

func (f *fixture) client(tlsCfg *tls.Config) *http.Client {
	u, _ := url.Parse(f.url)
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: tlsCfg, DisableKeepAlives: true},
		Timeout:   10 * time.Second,
	}
}

func (f *fixture) audit(t testing.TB) []Entry {
	t.Helper()
	es, err := ReadAudit(f.dir, "test-agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// raw sends a raw request to the proxy and returns the response head and
// the connection.
func (f *fixture) raw(t *testing.T, req string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(req)[0]})
	if err != nil {
		t.Fatalf("reading the proxy's response: %v", err)
	}
	c.SetDeadline(time.Time{})
	return resp, c, br
}

func (f *fixture) auth() string {
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("agent-sandbox:"+f.token)) + "\r\n"
}

func TestPlainHTTP(t *testing.T) {
	var got http.Header
	var gotHost, gotURI string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotHost, gotURI = r.Header.Clone(), r.Host, r.RequestURI
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Keep-Alive", "timeout=5")
		fmt.Fprintf(w, "hello %s", body)
	}))
	defer srv.Close()
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	req, _ := http.NewRequest("POST", srv.URL+"/path?q=1", strings.NewReader("body"))
	req.Header.Set("Connection", "X-Secret")
	req.Header.Set("X-Secret", "hop")
	req.Header.Set("X-Kept", "end-to-end")
	resp, err := f.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello body" {
		t.Fatalf("status %d body %q", resp.StatusCode, b)
	}
	if resp.Header.Get("Keep-Alive") != "" {
		t.Error("hop-by-hop Keep-Alive came back to the client")
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Secret"} {
		if got.Get(h) != "" {
			t.Errorf("upstream received %s: %q", h, got.Get(h))
		}
	}
	if got.Get("X-Kept") != "end-to-end" || gotHost != strings.TrimPrefix(srv.URL, "http://") || gotURI != "/path?q=1" {
		t.Errorf("upstream got host %q uri %q headers %v", gotHost, gotURI, got)
	}
	f.p.Close()
	es := f.audit(t)
	if len(es) != 1 || es[0].Decision != DecisionAllowed || es[0].Method != "POST" || es[0].BytesUp == 0 || es[0].BytesDown == 0 ||
		es[0].Address != strings.TrimPrefix(srv.URL, "http://") || es[0].Agent != "test-agent" {
		t.Fatalf("audit: %+v", es)
	}
}

func TestPlainHTTPStreams(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: second\n\n")
	}))
	defer srv.Close()
	defer close(release)
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	resp, err := f.client(nil).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event not streamed before the response ended: %q %v", line, err)
	}
}

func TestConnectHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	res := &fakeResolver{m: map[string][]string{"api.allowed.test": {"127.0.0.1"}}}
	f := startProxy(t, Config{Allow: []string{fmt.Sprintf("api.allowed.test:%d", port)}, Resolver: res})
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsCfg.ServerName = "example.com" // httptest's certificate names example.com
	resp, err := f.client(tlsCfg).Get(fmt.Sprintf("https://API.Allowed.test.:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "secure" {
		t.Fatalf("body %q", b)
	}
	if d := f.dial.dialled(); len(d) != 1 || d[0] != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("dialled %v, want the checked address only", d)
	}
	if res.calls != 1 {
		t.Errorf("resolved %d times, want once", res.calls)
	}
	f.p.Close()
	es := f.audit(t)
	if len(es) != 1 || es[0].Method != "CONNECT" || es[0].Decision != DecisionAllowed || es[0].BytesDown < 100 || es[0].Host != "API.Allowed.test." {
		t.Fatalf("audit: %+v", es)
	}
}

func TestRefusedNameNoDial(t *testing.T) {
	res := &fakeResolver{m: map[string][]string{"denied.test": {"93.184.216.34"}}}
	f := startProxy(t, Config{Allow: []string{"allowed.test"}, Resolver: res})
	for _, req := range []string{
		"CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n" + f.auth() + "\r\n",
		"GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n" + f.auth() + "\r\n",
		"CONNECT 93.184.216.34:443 HTTP/1.1\r\n" + f.auth() + "\r\n",
	} {
		resp, _, _ := f.raw(t, req)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(string(body), "not in the allow list") {
			t.Errorf("%q: %d %q", req, resp.StatusCode, body)
		}
	}
	if d := f.dial.dialled(); len(d) != 0 || res.calls != 0 {
		t.Errorf("a refused name was resolved (%d) or dialled (%v)", res.calls, d)
	}
	s := f.p.Summary()
	if s.Refused != 3 || s.RefusedHosts["denied.test"] != 2 || s.RefusedHosts["93.184.216.34"] != 1 {
		t.Errorf("summary %+v", s)
	}
	msg := s.Message()
	if !strings.Contains(msg, "refused 3 connections") || !strings.Contains(msg, "denied.test ×2") || !strings.Contains(msg, "--allow-host") {
		t.Errorf("message %q", msg)
	}
	f.p.Close()
	es := f.audit(t)
	if len(es) != 3 {
		t.Fatalf("audit has %d lines, want 3: %+v", len(es), es)
	}
	for _, e := range es {
		if e.Decision != DecisionRefused || e.Reason == "" {
			t.Errorf("audit line %+v", e)
		}
	}
}

func TestToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	bad := base64.StdEncoding.EncodeToString([]byte("agent-sandbox:" + strings.Repeat("0", len(f.token))))
	other := base64.StdEncoding.EncodeToString([]byte("someone:" + f.token))
	for _, hdr := range []string{"", "Proxy-Authorization: Basic " + bad + "\r\n", "Proxy-Authorization: Basic " + other + "\r\n", "Proxy-Authorization: Bearer " + f.token + "\r\n"} {
		resp, _, _ := f.raw(t, "CONNECT "+host+" HTTP/1.1\r\n"+hdr+"\r\n")
		if resp.StatusCode != 407 || !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic") {
			t.Errorf("header %q: %d %v", hdr, resp.StatusCode, resp.Header)
		}
	}
	if d := f.dial.dialled(); len(d) != 0 {
		t.Errorf("dialled %v without a token", d)
	}
	if s := f.p.Summary(); s.Unauthenticated != 4 || !strings.Contains(s.Message(), "4 requests without the proxy token") {
		t.Errorf("summary %+v %q", s, s.Message())
	}
}

func TestRebindingAndMetadata(t *testing.T) {
	echo := echoServer(t)
	port := echo.Addr().(*net.TCPAddr).Port
	res := &fakeResolver{m: map[string][]string{
		"rebind.wild.test": {"127.0.0.1"},
		"mixed.wild.test":  {"93.184.216.34", "10.0.0.1"},
		"named.test":       {"127.0.0.1"},
		"meta.test":        {"169.254.169.254"},
		"ll.test":          {"fe80::1"},
		"mapped.test":      {"::ffff:169.254.1.1"},
	}}
	f := startProxy(t, Config{Allow: []string{"*.wild.test", "named.test", "meta.test", "ll.test", "mapped.test", "127.0.0.1"}, Resolver: res})
	for host, want := range map[string]int{
		"rebind.wild.test": 403, "mixed.wild.test": 403, "meta.test": 403, "ll.test": 403, "mapped.test": 403,
		"named.test": 200, "127.0.0.1": 200, "169.254.169.254": 403, "metadata.google.internal": 403,
	} {
		resp, c, _ := f.raw(t, fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\n%s\r\n", host, port, f.auth()))
		if resp.StatusCode != want {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %q, want %d", host, resp.StatusCode, body, want)
		}
		c.Close()
	}
	for _, d := range f.dial.dialled() {
		if d != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("dialled %s", d)
		}
	}
	if n := len(f.dial.dialled()); n != 2 {
		t.Errorf("dialled %d times, want 2 (named.test, 127.0.0.1)", n)
	}
}

// echoServer accepts TCP connections and echoes them until the peer
// closes; it never closes first.
func echoServer(t testing.TB) net.Listener { return echoServerClosing(t, false) }

// serveEach listens on loopback and runs serve on each connection it
// accepts (closing the connection after), until the test ends.
func serveEach(tb testing.TB, serve func(net.Conn)) net.Listener {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return l
}

// proxiedClient is an HTTP client whose requests go through the proxy f.
func proxiedClient(f *fixture) *http.Client {
	u, _ := url.Parse(f.url)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 20 * time.Second}
}

// fetch gets target with client and returns the whole body.
func fetch(tb testing.TB, client *http.Client, target string) ([]byte, error) {
	tb.Helper()
	resp, err := client.Get(target)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// echoServerClosing is echoServer that, with closeOnEOF, closes a
// connection when its peer finished sending.
func echoServerClosing(t testing.TB, closeOnEOF bool) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A plain loop, not io.Copy: io.Copy between sockets
				// splices through cached pipes, which would blur the
				// descriptor count of the leak test.
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						break
					}
				}
				if closeOnEOF {
					c.Close()
				}
				// Keep the connection open (half-open from our side) until
				// the test ends.
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l
}

func TestTunnelTimeouts(t *testing.T) {
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			defer func(old bool) { spliceOK = old }(spliceOK)
			spliceOK = splice
			testTunnelTimeouts(t)
		})
	}
}

func testTunnelTimeouts(t *testing.T) {
	echo := echoServer(t)
	target := echo.Addr().String()
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}, IdleTimeout: 300 * time.Millisecond, HalfOpenTimeout: 300 * time.Millisecond, HandshakeTimeout: 300 * time.Millisecond})

	// Idle: echo works, then silence closes the tunnel.
	resp, c, br := f.raw(t, "CONNECT "+target+" HTTP/1.1\r\n"+f.auth()+"\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
	// Activity in one direction keeps the tunnel open past the idle timeout.
	for i := 0; i < 6; i++ {
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "x")
		io.ReadFull(br, buf[:1])
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("idle tunnel not closed: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("idle close took %v", d)
	}

	// Half-open: the client stops sending, the echo server never closes.
	resp, c, br = f.raw(t, "CONNECT "+target+" HTTP/1.1\r\n"+f.auth()+"\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	io.WriteString(c, "bye")
	c.(*net.TCPConn).CloseWrite()
	start = time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(br)
	if string(got) != "bye" || err != nil {
		t.Fatalf("half-open tunnel: got %q, %v (want the echo then EOF)", got, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("half-open close took %v", d)
	}

	// Handshake: a partial header is answered 408 and closed.
	hc, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	io.WriteString(hc, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n")
	hc.SetReadDeadline(time.Now().Add(5 * time.Second))
	r, err := http.ReadResponse(bufio.NewReader(hc), nil)
	if err != nil || r.StatusCode != 408 {
		t.Fatalf("handshake timeout: %v %v", r, err)
	}
}

func TestProxyEnvAndURL(t *testing.T) {
	u := ProxyURL("tok", 3128)
	if u != "http://agent-sandbox:tok@127.0.0.1:3128" {
		t.Fatal(u)
	}
	env := strings.Join(ProxyEnv(u), "\n")
	for _, want := range []string{"HTTP_PROXY=" + u, "https_proxy=" + u, "ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1", "NODE_USE_ENV_PROXY=1"} {
		if !strings.Contains(env+"\n", want+"\n") {
			t.Errorf("ProxyEnv lacks %s", want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	tok := NewToken()
	if len(tok) != 64 || tok == NewToken() {
		t.Fatalf("token %q", tok)
	}
	for _, cfg := range []Config{
		{Token: tok, Allow: []string{"a b"}},
		{Token: "short"},
		{Token: tok + ":x"},
		{Token: tok, AgentID: "../x", AuditDir: t.TempDir()},
		{Token: tok, Allow: []string{"169.254.169.254"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestAuditRotationAndPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	f := startProxy(t, Config{Allow: []string{"allowed.test"}, AuditDir: dir, AuditMaxBytes: 2000, AuditRunBytes: 1 << 20})
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "CONNECT denied%d.test:443 HTTP/1.1\r\n%s\r\n", i, f.auth())
			io.Copy(io.Discard, c)
		}()
	}
	wg.Wait()
	f.p.Close()
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("audit dir mode %v %v", st.Mode(), err)
	}
	for _, name := range []string{"test-agent.jsonl", "test-agent.jsonl.1"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != 0o600 || st.Size() > 2000 {
			t.Errorf("%s: mode %v size %d", name, st.Mode(), st.Size())
		}
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e Entry
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Decision != DecisionRefused {
				t.Errorf("%s: bad line %q", name, line)
			}
		}
	}
	es, err := ReadAudit(dir, "test-agent", 5)
	if err != nil || len(es) != 5 {
		t.Fatalf("ReadAudit: %d %v", len(es), err)
	}
	all, _ := ReadAudit(dir, "", 0)
	if len(all) < 5 || len(all) >= 40 {
		t.Errorf("ReadAudit(all) = %d entries, want the bounded tail", len(all))
	}
}

func TestWriteLog(t *testing.T) {
	es := []Entry{{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Agent: "claude", Method: "CONNECT", Host: "evil\x1b[31m.test", Port: 443,
		Decision: DecisionRefused, Reason: "host not in the allow list"}, {Host: "::1", Port: 80, Decision: DecisionAllowed, BytesUp: 3, BytesDown: 4}}
	var b strings.Builder
	if err := WriteLog(&b, es, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "refused CONNECT evil[31m.test:443") || !strings.Contains(out, "[::1]:80") || !strings.Contains(out, "up=3 down=4") {
		t.Errorf("text log:\n%s", out)
	}
	b.Reset()
	WriteLog(&b, es, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var e Entry
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &e) != nil || e.Host != es[0].Host {
		t.Errorf("json log:\n%s", b.String())
	}
}

// pooledFDs counts the descriptors of the splice pipes kept for reuse
// (splice_linux.go), which outlive the tunnels by design.
func pooledFDs() int { return 2 * IdlePipes() }

// countFDs counts this process's open file descriptors.
func countFDs(t testing.TB) int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count descriptors: %v", err)
	}
	return len(des)
}

func TestCloseEndsTunnelsWithoutLeaks(t *testing.T) {
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			defer func(old bool) { spliceOK = old }(spliceOK)
			spliceOK = splice
			testCloseEndsTunnels(t)
		})
	}
}

// settleGC lets cached splice pipes (closed by finalizers) go.
func settleGC() {
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func testCloseEndsTunnels(t *testing.T) {
	echo := echoServer(t)
	target := echo.Addr().String()
	settleGC()
	baseG, baseFD := runtime.NumGoroutine(), countFDs(t)-pooledFDs()

	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	const n = 50
	var conns []net.Conn
	for i := 0; i < n; i++ {
		resp, c, br := f.raw(t, "CONNECT "+target+" HTTP/1.1\r\n"+f.auth()+"\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %d: %d", i, resp.StatusCode)
		}
		io.WriteString(c, "x")
		if b, err := br.ReadByte(); err != nil || b != 'x' {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	f.p.Close()
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("tunnel still open after Close: %v", err)
		}
		c.Close()
	}
	if s := f.p.Summary(); s.Allowed != n {
		t.Errorf("summary %+v", s)
	}
	if es := f.audit(t); len(es) != n {
		t.Errorf("audit has %d lines, want %d", len(es), n)
	}
	// The echo server's own goroutines end when its peers close; wait for
	// the counts to come back.
	var g, fd int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		settleGC()
		g, fd = runtime.NumGoroutine(), countFDs(t)-pooledFDs()
		// The echo server keeps one goroutine per accepted connection
		// until its cleanup; count only ours by allowing them.
		if g <= baseG+n && fd <= baseFD+n {
			break
		}
	}
	// The echo server still holds n connections (it never closes first),
	// each an fd and a goroutine: anything above that is a leak.
	if g > baseG+n || fd > baseFD+n {
		t.Errorf("after Close: %d goroutines (baseline %d + %d echo), %d fds (baseline %d + %d echo)", g, baseG, n, fd, baseFD, n)
	}
}

func TestPlainHTTPKeepAliveAndLimits(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	host := strings.TrimPrefix(srv.URL, "http://")
	// Two requests on one client connection.
	req := "GET " + srv.URL + "/a HTTP/1.1\r\nHost: " + host + "\r\n" + f.auth() + "\r\n"
	resp, c, br := f.raw(t, req)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "ok" || resp.Close {
		t.Fatalf("first: %d %q close=%v", resp.StatusCode, b, resp.Close)
	}
	io.WriteString(c, req)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("second request on the same connection: %v %v", resp, err)
	}
	resp.Body.Close()
	if n.Load() != 2 {
		t.Errorf("upstream saw %d requests", n.Load())
	}
	// A header block over the limit is refused.
	resp, _, _ = f.raw(t, "GET "+srv.URL+"/ HTTP/1.1\r\nX-Big: "+strings.Repeat("a", maxHeaderBytes)+"\r\n\r\n")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header: %d", resp.StatusCode)
	}
	// Origin-form (not a proxy request) and https:// absolute form are 400.
	for _, r := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET https://" + host + "/ HTTP/1.1\r\n\r\n"} {
		resp, _, _ = f.raw(t, r)
		if resp.StatusCode != 400 {
			t.Errorf("%q: %d", r, resp.StatusCode)
		}
	}
}

func TestIPv6Literal(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback to listen on: %v", err)
	}
	l.Close()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "v6") }))
	srv.Listener, _ = net.Listen("tcp", "[::1]:0")
	srv.Start()
	defer srv.Close()
	f := startProxy(t, Config{Allow: []string{"[::1]"}})
	resp, err := f.client(nil).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "v6" {
		t.Fatalf("body %q", b)
	}
	if d := f.dial.dialled(); len(d) != 1 || !strings.HasPrefix(d[0], "[::1]:") {
		t.Errorf("dialled %v", d)
	}
}

// blockingResolver blocks until its context ends.
type blockingResolver struct{ started chan struct{} }

func (r blockingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	close(r.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestCloseCancelsResolution(t *testing.T) {
	res := blockingResolver{started: make(chan struct{})}
	f := startProxy(t, Config{Allow: []string{"slow.test"}, Resolver: res, DialTimeout: time.Minute})
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT slow.test:443 HTTP/1.1\r\n"+f.auth()+"\r\n")
	<-res.started
	start := time.Now()
	f.p.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close waited %v for a resolution", d)
	}
	es := f.audit(t)
	if len(es) != 1 || es[0].Decision != DecisionFailed {
		t.Errorf("audit %+v", es)
	}
}

// TestSandboxLoopback (issue 23 item 7): for a sandboxed run the proxy
// admits a loopback target (localhost, 127.0.0.0/8, ::1) on the forwarded
// ports only, whatever the list names: through the proxy it reaches what a
// direct connection from the sandbox reaches. Without SandboxLoopback the
// list alone decides (a proxy serving no sandbox).
func TestSandboxLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host-loopback") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	get := func(f *fixture, host string) int {
		resp, err := f.client(nil).Get(fmt.Sprintf("http://%s:%d/", host, port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	res := &fakeResolver{m: map[string][]string{"localhost": {"127.0.0.1"}}}
	// 127.0.0.1 named without a port: every port, for a proxy alone.
	alone := startProxy(t, Config{Allow: []string{"127.0.0.1", "localhost"}, Resolver: res})
	if code := get(alone, "127.0.0.1"); code != 200 {
		t.Errorf("proxy without SandboxLoopback: 127.0.0.1:%d got %d, want 200", port, code)
	}
	// In a sandbox: refused unless the port is forwarded.
	sb := startProxy(t, Config{Allow: []string{"127.0.0.1", "localhost"}, Resolver: res, SandboxLoopback: true, Forwarded: []int{1}})
	for _, h := range []string{"127.0.0.1", "localhost"} {
		if code := get(sb, h); code != http.StatusForbidden {
			t.Errorf("sandbox, %s:%d not forwarded: got %d, want 403", h, port, code)
		}
	}
	es := sb.audit(t)
	if len(es) == 0 || !strings.Contains(es[0].Reason, fmt.Sprintf("port %d of the loopback is not forwarded", port)) {
		t.Errorf("audit does not say why: %+v", es)
	}
	if msg := sb.p.Summary().Message(); !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d", port)) {
		t.Errorf("the end-of-run line does not name the port: %s", msg)
	}
	// Forwarded: admitted without the list naming it.
	fw := startProxy(t, Config{Allow: []string{"api.example.com"}, Resolver: res, SandboxLoopback: true, Forwarded: []int{port}})
	for _, h := range []string{"127.0.0.1", "localhost"} {
		if code := get(fw, h); code != 200 {
			t.Errorf("sandbox, %s:%d forwarded: got %d, want 200", h, port, code)
		}
	}
}

// TestAuditFlood (issue 24 item 7): requests without the token, with 60
// KiB of junk as their target, must not erase the audit log: nothing the
// client sent is logged before the token is checked, only the first few
// are logged at all, every one is counted in the summary, and one run
// cannot write more than its share (AuditRunBytes), so the record from
// before the flood survives. Before the fix 200 such requests rotated
// both files away.
func TestAuditFlood(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	f := startProxy(t, Config{Allow: []string{"allowed.test"}, AuditDir: dir, AuditMaxBytes: 64 << 10})
	resp, _, _ := f.raw(t, "CONNECT before-the-flood.test:443 HTTP/1.1\r\n"+f.auth()+"\r\n")
	if resp.StatusCode != 403 {
		t.Fatalf("the first request: %d", resp.StatusCode)
	}
	junk := strings.Repeat("x", 60<<10)
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s%d:443 HTTP/1.1\r\n\r\n", junk, i)
		io.Copy(io.Discard, c)
		c.Close()
	}
	// With the token, refused hosts with long names: bounded per line and
	// per run.
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat(strings.Repeat("y", 60)+".", 3) + strings.Repeat("y", 50)
		fmt.Fprintf(c, "CONNECT %s%d.test:443 HTTP/1.1\r\n%s\r\n", long, i, f.auth())
		io.Copy(io.Discard, c)
		c.Close()
	}
	f.p.Close()
	s := f.p.Summary()
	if s.Unauthenticated+s.Malformed != 200 || s.Refused != 201 || s.Unlogged == 0 {
		t.Errorf("summary %+v", s)
	}
	if msg := s.Message(); !strings.Contains(msg, "not in the audit log") {
		t.Errorf("the end-of-run line does not say what the log lacks: %q", msg)
	}
	es, err := ReadAudit(dir, "test-agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 || es[0].Host != "before-the-flood.test" {
		t.Errorf("the record from before the flood is gone (first of %d entries: %+v)", len(es), es[0])
	}
	for _, e := range es {
		if strings.Contains(e.Host, junk[:100]) || len(e.Host) > maxAuditHost+32 {
			t.Errorf("an entry holds %d bytes of host", len(e.Host))
		}
	}
	if last := es[len(es)-1]; !strings.Contains(last.Reason, "not logged") {
		t.Errorf("no closing line counting what was not logged: %+v", last)
	}
	if _, err := os.Stat(filepath.Join(dir, "test-agent.jsonl.1")); err == nil {
		t.Errorf("one run rotated the audit log")
	}
}

// TestWildcardOwnAddress (issue 24 item 8): a name under a wildcard entry
// that resolves to this machine's own public address (any interface, IPv4
// or IPv6) would reach the host's services bound to every address: it is
// refused like loopback; a host the list names exactly may still resolve
// there, and another public address under the wildcard is admitted.
func TestWildcardOwnAddress(t *testing.T) {
	echo := echoServer(t)
	port := echo.Addr().(*net.TCPAddr).Port
	res := &fakeResolver{m: map[string][]string{
		"me.example.test":      {"203.0.113.7"},
		"me6.example.test":     {"2001:db8::7"},
		"other.example.test":   {"203.0.113.8"},
		"exactly.example.test": {"203.0.113.7"},
	}}
	own := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("203.0.113.7"), Mask: net.CIDRMask(24, 32)},
			&net.IPNet{IP: net.ParseIP("2001:db8::7"), Mask: net.CIDRMask(64, 128)},
		}, nil
	}
	f := startProxy(t, Config{Allow: []string{"*.example.test", "exactly.example.test"}, Resolver: res, OwnAddrs: own})
	// Admitted: dialled (the documentation addresses lead nowhere, so
	// the dial itself fails: 502, not the policy's 403).
	for host, refused := range map[string]bool{
		"me.example.test": true, "me6.example.test": true, "other.example.test": false, "exactly.example.test": false,
	} {
		resp, c, _ := f.raw(t, fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\n%s\r\n", host, port, f.auth()))
		if (resp.StatusCode == 403) != refused {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("%s: %d %q, want refused=%v", host, resp.StatusCode, body, refused)
		}
		c.Close()
	}
	for _, e := range f.audit(t) {
		if e.Host == "me.example.test" && !strings.Contains(e.Reason, "this machine's own") {
			t.Errorf("the refusal does not say why: %+v", e)
		}
	}
}

// TestCredentialRoute (issue 26): a request to /ROUTE/... with the
// phantom reaches the https upstream with the real key in its place (and
// the path and query kept); a wrong phantom, and the real value sent from
// inside, are refused and never forwarded; a CONNECT to the route's host
// is refused naming the base URL variable; the audit log says that a
// credential was injected and never holds the values.
func TestCredentialRoute(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" key="+r.Header.Get("x-api-key"))
		mu.Unlock()
		fmt.Fprint(w, "upstream-ok")
	}))
	defer up.Close()
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	port := up.Listener.Addr().(*net.TCPAddr).Port
	real, phantom := "sk-real-0123456789abcdef", "sk-phantom-"+NewToken()
	f := startProxy(t, Config{
		Allow: []string{"127.0.0.1"}, RootCAs: pool, Dial: (&net.Dialer{}).DialContext,
		Routes: []Route{{Name: "anthropic", Env: "ANTHROPIC_API_KEY", BaseEnv: "ANTHROPIC_BASE_URL",
			Upstream: fmt.Sprintf("https://127.0.0.1:%d/base", port), Header: "x-api-key", Phantom: phantom, Real: real}},
	})
	get := func(key string) (int, string) {
		t.Helper()
		resp, _, _ := f.raw(t, "POST /anthropic/v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: "+key+"\r\nContent-Length: 2\r\n\r\n{}")
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(phantom); code != 200 || body != "upstream-ok" {
		t.Fatalf("with the phantom: %d %q", code, body)
	}
	if code, _ := get("sk-phantom-of-another-run-0000000000"); code != 403 {
		t.Errorf("a wrong phantom: %d, want 403", code)
	}
	if code, _ := get(real); code != 403 {
		t.Errorf("the real value from inside: %d, want 403", code)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "POST /base/v1/messages?beta=true key="+real {
		t.Errorf("the upstream saw %q", seen)
	}
	mu.Unlock()
	resp, _, _ := f.raw(t, fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\n%s\r\n", port, f.auth()))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(string(body), "ANTHROPIC_BASE_URL") {
		t.Errorf("CONNECT to the route's host: %d %q", resp.StatusCode, body)
	}
	f.p.Close()
	raw, _ := os.ReadFile(AuditFile(f.dir, "test-agent"))
	if strings.Contains(string(raw), real) || strings.Contains(string(raw), phantom) {
		t.Errorf("the audit log holds a credential:\n%s", raw)
	}
	if !strings.Contains(string(raw), "credential ANTHROPIC_API_KEY injected") {
		t.Errorf("the audit log does not say the credential was injected:\n%s", raw)
	}
}

// TestForwardLargeBody: a plain HTTP response with Content-Length larger
// than the reader's buffer arrives whole and unchanged (the kernel-side
// copy after the bytes already read), on a kept-alive connection that
// then serves the next request; the audit counts its bytes.
func TestForwardLargeBody(t *testing.T) {
	body := make([]byte, 5<<20+123)
	for i := range body {
		body[i] = byte(i*7 + i/251)
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer web.Close()
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}, Dial: (&net.Dialer{}).DialContext})
	client := proxiedClient(f)
	for i := 0; i < 2; i++ {
		got, err := fetch(t, client, web.URL+"/big")
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("request %d: %d bytes (%v), want the %d sent", i, len(got), err, len(body))
		}
	}
	f.p.Close()
	var down int64
	for _, e := range f.audit(t) {
		if e.Method == "GET" {
			down += e.BytesDown
		}
	}
	if down < int64(2*len(body)) {
		t.Errorf("the audit counts %d bytes down, want at least %d", down, 2*len(body))
	}
}
