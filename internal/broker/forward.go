package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// hopHeaders are the hop-by-hop headers (RFC 9110 section 7.6.1) plus the
// proxy's own, never forwarded in either direction.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// idleConn refreshes a read and write deadline of IdleTimeout as bytes
// move, and counts them.
type idleConn struct {
	net.Conn
	idle   time.Duration
	setAt  time.Time
	rn, wn int64
}

func (c *idleConn) refresh() {
	if now := time.Now(); now.Sub(c.setAt) > c.idle/8 {
		_ = c.Conn.SetDeadline(now.Add(c.idle))
		c.setAt = now
	}
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.refresh()
	n, err := c.Conn.Read(b)
	c.rn += int64(n)
	return n, err
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.refresh()
	n, err := c.Conn.Write(b)
	c.wn += int64(n)
	return n, err
}

// forward serves one absolute-form plain HTTP request: the request goes
// upstream in origin form on a new connection (closed afterwards) without
// hop-by-hop headers and Proxy-Authorization, and the response comes back
// framed for the client, flushed as it arrives (so streamed responses
// stream). It reports whether the client connection may carry another
// request.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, r *request, a *attempt) bool {
	req := r.req
	upc := p.upstream(c, r, a)
	if upc == nil {
		return false
	}
	defer p.untrack(upc, true)
	upConn, ok := p.upstreamTLS(c, upc, r, a)
	if !ok {
		return false
	}
	a.decision = DecisionAllowed
	up := &idleConn{Conn: upConn, idle: p.cfg.IdleTimeout}
	client := &idleConn{Conn: c, idle: p.cfg.IdleTimeout}
	defer func() {
		a.up, a.down = up.wn, up.rn
		_ = c.SetDeadline(time.Time{})
		p.record(a)
	}()

	keep, expect := originForm(req, r.scrub)
	if !p.sendRequest(c, client, up, req, expect, a) {
		return false
	}
	ubr := bufio.NewReader(up)
	resp, ok := finalResponse(ubr, client, req, r.scrub, a)
	if !ok {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		a.reason += "; upstream switched protocols, not supported through plain HTTP"
		writeRefusal(client, http.StatusBadGateway, "upstream switched protocols (use CONNECT for WebSocket)")
		return false
	}

	noBody := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	removeHopHeaders(resp.Header)
	body, err := routedBody(r.scrub, resp, noBody)
	if err != nil {
		a.reason = fmt.Sprintf("%s; %v", a.reason, err)
		writeRefusal(client, http.StatusBadGateway, err.Error())
		return false
	}
	chunked, keep := responseFraming(req, resp, noBody, keep)
	bw := bufio.NewWriterSize(client, 4096)
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", resp.Status)
	resp.Header.Write(bw)
	bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		return false
	}
	if noBody {
		return keep
	}
	if !chunked && resp.ContentLength > 0 && r.scrub == nil {
		if ok, done := p.spliceBody(c, upConn, ubr, resp.ContentLength, up, client, a); ok {
			return done && keep
		}
	}
	return copyBody(bw, body, chunked, r.scrub, a) && keep
}

// upstreamTLS is the connection the request goes out on: upc itself, or
// for a TLS-intercepted request upc wrapped in TLS to the target host. A
// failed handshake is recorded and answered 502; ok is then false.
func (p *Proxy) upstreamTLS(c, upc net.Conn, r *request, a *attempt) (net.Conn, bool) {
	var upConn net.Conn = upc
	if r.tls {
		tc, err := p.wrapTLS(upc, r.target.host)
		if err != nil {
			a.decision, a.reason = DecisionFailed, fmt.Sprintf("TLS with %s: %v", r.target.host, err)
			p.record(a)
			writeRefusal(c, http.StatusBadGateway, a.reason)
			return nil, false
		}
		upConn = tc
	}
	return upConn, true
}

// originForm rewrites req for the upstream: origin form, no hop-by-hop
// headers, no Expect, closed afterwards; a routed request (scrub not nil)
// asks for the whole answer in the clear. It returns whether the client
// connection may be kept and whether the client expects 100 Continue.
func originForm(req *http.Request, scrub *scrubber) (keep, expect bool) {
	keep = !req.Close && req.ProtoAtLeast(1, 1)
	expect = strings.EqualFold(strings.TrimSpace(req.Header.Get("Expect")), "100-continue")
	req.Header.Del("Expect")
	removeHopHeaders(req.Header)
	req.Host = req.URL.Host
	req.Close = true
	req.RequestURI = ""
	if scrub != nil {
		// The answer is scanned for the real key: it must come in the
		// clear, and whole (a byte range could cut the key in pieces
		// that no scan recognises).
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Del("Range")
		req.Header.Del("If-Range")
	}
	return keep, expect
}

// sendRequest answers 100 Continue when the client waits for it and
// writes req upstream, its body read from the client under the idle
// timeout; it reports whether the request went out.
func (p *Proxy) sendRequest(c net.Conn, client, up *idleConn, req *http.Request, expect bool, a *attempt) bool {
	if expect && req.ContentLength != 0 {
		if _, err := io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &bodyReader{ReadCloser: req.Body, c: c, idle: p.cfg.IdleTimeout}
	}
	if err := req.Write(up); err != nil {
		a.reason = fmt.Sprintf("%s; request not forwarded: %v", a.reason, err)
		return false
	}
	return true
}

// finalResponse reads the upstream's response to req, passing 1xx
// informational responses (103 Early Hints) on to the client, until a
// final one or 101 Switching Protocols; no valid response is answered 502
// and ok is then false.
func finalResponse(ubr *bufio.Reader, client *idleConn, req *http.Request, scrub *scrubber, a *attempt) (*http.Response, bool) {
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			a.reason = fmt.Sprintf("%s; no response: %v", a.reason, err)
			writeRefusal(client, http.StatusBadGateway, "no valid response from upstream: "+err.Error())
			return nil, false
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// 1xx informational responses (103 Early Hints) are passed on.
		removeHopHeaders(resp.Header)
		scrubHead(scrub, resp)
		bw := bufio.NewWriter(client)
		fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", resp.Status)
		resp.Header.Write(bw)
		bw.WriteString("\r\n")
		if bw.Flush() != nil {
			return nil, false
		}
	}
	return resp, true
}

// responseFraming sets how the response body is delimited for the client:
// Content-Length when known, chunked to an HTTP/1.1 client otherwise, or
// the connection's close for an HTTP/1.0 one. It returns whether the body
// goes chunked and whether the client connection may still be kept.
func responseFraming(req *http.Request, resp *http.Response, noBody, keep bool) (chunked, keepAlive bool) {
	resp.Header.Del("Content-Length")
	switch {
	case noBody:
		if resp.ContentLength > 0 && req.Method == http.MethodHead {
			resp.Header.Set("Content-Length", fmt.Sprint(resp.ContentLength))
		}
	case resp.ContentLength >= 0:
		resp.Header.Set("Content-Length", fmt.Sprint(resp.ContentLength))
	case req.ProtoAtLeast(1, 1):
		chunked = true
		resp.Header.Set("Transfer-Encoding", "chunked")
	default:
		keep = false // HTTP/1.0 client, unknown length: close-delimited
	}
	if !keep {
		resp.Header.Set("Connection", "close")
	}
	return chunked, keep
}

// routedBody is what of resp's body goes to the client: for a routed
// request (s not nil) its status line and header scrubbed, its body
// decoded (its length then unknown); for any other, the body as it is.
func routedBody(s *scrubber, resp *http.Response, noBody bool) (io.Reader, error) {
	if s == nil {
		return resp.Body, nil
	}
	scrubHead(s, resp)
	if noBody {
		return resp.Body, nil
	}
	body, err := decodedBody(resp)
	// The replacement may change the length.
	resp.ContentLength = -1
	return body, err
}

// copyBody copies body to bw as it arrives (chunked, or as it is),
// flushed after each read, through the scrubber s of a routed request;
// it reports whether the whole body went through.
func copyBody(bw *bufio.Writer, body io.Reader, chunked bool, s *scrubber, a *attempt) bool {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var out []byte
	send := func(b []byte) bool {
		if len(b) == 0 {
			return true
		}
		if chunked {
			fmt.Fprintf(bw, "%x\r\n", len(b))
		}
		bw.Write(b)
		if chunked {
			bw.WriteString("\r\n")
		}
		return bw.Flush() == nil
	}
	for {
		n, err := body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if s != nil {
				out = s.Write(out[:0], chunk)
				chunk = out
			}
			if !send(chunk) {
				return false
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			a.reason = fmt.Sprintf("%s; response cut: %v", a.reason, err)
			return false
		}
	}
	if s != nil && !send(s.Flush(out[:0])) {
		return false
	}
	if chunked {
		bw.WriteString("0\r\n\r\n")
		if bw.Flush() != nil {
			return false
		}
	}
	return true
}

// scrubHead replaces the real key by the phantom in a routed response's
// status line and header (s nil: not routed).
func scrubHead(s *scrubber, resp *http.Response) {
	if s == nil {
		return
	}
	resp.Status = s.String(resp.Status)
	s.scrubHeader(resp.Header)
}

// bodyReader reads a request body from the client, with the client's
// read deadline at the idle timeout.
type bodyReader struct {
	io.ReadCloser
	c    net.Conn
	idle time.Duration
}

func (d *bodyReader) Read(b []byte) (int, error) {
	_ = d.c.SetReadDeadline(time.Now().Add(d.idle))
	return d.ReadCloser.Read(b)
}

// spliceBody copies a response body of n bytes from a plain TCP upstream
// to a TCP client in the kernel (splice), after the bytes the response
// reader already holds: a large download then costs the broker no copy
// through user space. It returns ok false, having copied nothing, when
// either side is not a plain TCP connection (TLS upstream, intercepted
// client, splice turned off); done says the whole body went through.
func (p *Proxy) spliceBody(c, upConn net.Conn, ubr *bufio.Reader, n int64, up, client *idleConn, a *attempt) (ok, done bool) {
	ctcp, ok1 := c.(*net.TCPConn)
	utcp, ok2 := upConn.(*net.TCPConn)
	if !ok1 || !ok2 || !spliceOK {
		return false, false
	}
	// After the copy the response body's own reader must not wait for
	// bytes that went around it (its Close drains what it thinks is left).
	defer func() { _ = utcp.SetReadDeadline(time.Now()) }()
	if k := int64(ubr.Buffered()); k > 0 {
		k = min(k, n)
		w, err := io.CopyN(client, ubr, k)
		n -= w
		if err != nil {
			a.reason = fmt.Sprintf("%s; response cut: %v", a.reason, err)
			return true, false
		}
	}
	var buf []byte // for steps without a pipe
	for n > 0 {
		_ = utcp.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		_ = ctcp.SetWriteDeadline(time.Now().Add(p.cfg.IdleTimeout))
		w, eof, err := spliceStep(ctcp, utcp, min(n, spliceChunk), nil)
		if errors.Is(err, errNoPipe) {
			// Out of descriptors: this step through a buffer.
			if buf == nil {
				buf = make([]byte, 32<<10)
			}
			k, rerr := utcp.Read(buf[:min(n-w, int64(len(buf)))])
			wk, werr := ctcp.Write(buf[:k])
			w += int64(wk)
			switch {
			case werr != nil:
				err = werr
			case errors.Is(rerr, io.EOF):
				eof, err = true, nil
			default:
				err = rerr
			}
		}
		n -= w
		up.rn += w
		client.wn += w
		if eof && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			a.reason = fmt.Sprintf("%s; response cut: %v", a.reason, err)
			return true, false
		}
	}
	_ = ctcp.SetWriteDeadline(time.Time{})
	return true, true
}
