package broker

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestServeForward: a forwarded connection reaches its destination, moves
// bytes both ways and is one audit line; past MaxConns a connection is
// refused and logged; a destination that does not answer is a failed line.
func TestServeForward(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	dir := t.TempDir()
	p, err := New(Config{AgentID: "fw", Token: NewToken(), AuditDir: dir, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.ServeForward(l, Forward{Method: MethodForward, Host: "localhost", Port: 11434, Reason: "open_port 11434",
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", echo.Addr().String())
		}})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "ping")
	b := make([]byte, 4)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo through the forward: %q %v", b, err)
	}
	// A second connection while the first is open is over the limit.
	c2, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	if n, _ := c2.Read(b); n != 0 {
		t.Errorf("a connection over MaxConns was served")
	}
	c2.Close()
	c.Close()
	// A destination that does not answer (another proxy: the first one's
	// connection may still be counted while it winds down).
	p2, err := New(Config{AgentID: "fw2", Token: NewToken(), AuditDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	failing, _ := net.Listen("tcp", "127.0.0.1:0")
	go p2.ServeForward(failing, Forward{Method: MethodInbound, Host: "localhost", Port: 3000, Reason: "listen_port 3000",
		Dial: func(ctx context.Context) (net.Conn, error) { return nil, io.ErrUnexpectedEOF }})
	c3, err := net.Dial("tcp", failing.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c3.SetDeadline(time.Now().Add(5 * time.Second))
	c3.Read(b)
	c3.Close()
	time.Sleep(100 * time.Millisecond)
	p.Close()
	p2.Close()
	es, err := ReadAudit(dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Method+" "+e.Decision+" "+e.Reason)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"FORWARD allowed open_port 11434", "FORWARD refused too many concurrent connections", "INBOUND failed listen_port 3000: cannot connect"} {
		if !strings.Contains(all, want) {
			t.Errorf("audit lacks %q:\n%s", want, all)
		}
	}
	for _, e := range es {
		if e.Decision == DecisionAllowed && (e.BytesUp != 4 || e.BytesDown != 4) {
			t.Errorf("bytes %d up %d down, want 4 and 4", e.BytesUp, e.BytesDown)
		}
	}
}

// TestLoopbackPort: which allow-list entries name a loopback port.
func TestLoopbackPort(t *testing.T) {
	for in, want := range map[string]int{
		"localhost:8080": 8080, "LOCALHOST.:8081": 8081, "127.0.0.1:9000": 9000, "[::1]:9001": 9001, "127.0.0.2:9002": 0,
		"localhost": 0, "127.0.0.1": 0, "api.example.com:443": 0, "10.0.0.1:80": 0, "evil.localhost:80": 0, "bad entry": 0,
	} {
		port, ok := LoopbackPort(in)
		if (want != 0) != ok || ok && port != want {
			t.Errorf("LoopbackPort(%q) = %d, %v; want %d", in, port, ok, want)
		}
	}
}
