package broker

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkRoundTrip measures one 64-byte request and its echo over an
// open connection, direct to a loopback echo server and through a CONNECT
// tunnel: the difference is the latency the broker adds per request.
func BenchmarkRoundTrip(b *testing.B) {
	echo := echoServerClosing(b, true)
	target := echo.Addr().String()
	f := startProxy(b, Config{Allow: []string{"127.0.0.1"}})
	dial := map[string]func() net.Conn{
		"direct": func() net.Conn {
			c, err := net.Dial("tcp", target)
			if err != nil {
				b.Fatal(err)
			}
			return c
		},
		"tunnel": func() net.Conn { return openTunnel(b, f, target) },
	}
	for _, name := range []string{"direct", "tunnel"} {
		b.Run(name, func(b *testing.B) {
			c := dial[name]()
			defer c.Close()
			msg, buf := make([]byte, 64), make([]byte, 64)
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConnect measures a whole tunnel set-up: TCP connect to the
// proxy, CONNECT with the token, policy check, upstream dial, 200, one
// round trip, close.
func BenchmarkConnect(b *testing.B) {
	echo := echoServerClosing(b, true)
	target := echo.Addr().String()
	f := startProxy(b, Config{Allow: []string{"127.0.0.1"}, AuditDir: b.TempDir()})
	buf := make([]byte, 1)
	for b.Loop() {
		c := openTunnel(b, f, target)
		c.Write(buf)
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// openTunnel opens a CONNECT tunnel to target through f.
func openTunnel(tb testing.TB, f *fixture, target string) net.Conn {
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n%s\r\n", target, f.auth())
	// The 200 response head is exactly this long; reading it byte-exact
	// leaves no tunnel bytes in a buffer.
	want := "HTTP/1.1 200 Connection established\r\n\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		tb.Fatalf("CONNECT: %q %v", got, err)
	}
	return c
}
