package broker

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRoundTrip measures one 64-byte request and its echo over an
// open connection, direct to a loopback echo server and through a CONNECT
// tunnel: the difference is the latency the broker adds per request (the
// median of the round trips, p50-µs, beside the mean).
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
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
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

// throughputSize is what one operation of BenchmarkThroughput downloads.
const throughputSize = 64 << 20

// BenchmarkThroughput measures a download of throughputSize bytes from a
// loopback server, direct and through the broker: over a CONNECT tunnel
// (raw bytes) and as a plain HTTP request forwarded by the broker (a
// response with Content-Length). MB/s is the figure; docs/benchmarks.md
// compares the broker's with the direct one (issue 27: at least 90 %).
func BenchmarkThroughput(b *testing.B) {
	payload := make([]byte, 1<<20)
	raw := serveEach(b, func(c net.Conn) {
		for sent := 0; sent < throughputSize; sent += len(payload) {
			if _, err := c.Write(payload); err != nil {
				return
			}
		}
	})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(throughputSize))
		for sent := 0; sent < throughputSize; sent += len(payload) {
			if _, err := w.Write(payload); err != nil {
				return
			}
		}
	}))
	defer web.Close()
	f := startProxy(b, Config{Allow: []string{"127.0.0.1"}, Dial: (&net.Dialer{}).DialContext})
	proxyURL, _ := url.Parse(f.url)
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	drain := func(r io.Reader) {
		n, err := io.Copy(io.Discard, r)
		if err != nil || n != throughputSize {
			b.Fatalf("read %d bytes (%v), want %d", n, err, throughputSize)
		}
	}
	get := func(c *http.Client) {
		resp, err := c.Get(web.URL)
		if err != nil {
			b.Fatal(err)
		}
		drain(resp.Body)
		resp.Body.Close()
	}
	cases := []struct {
		name string
		run  func()
	}{
		{"tcp-direct", func() {
			c, err := net.Dial("tcp", raw.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			drain(c)
			c.Close()
		}},
		{"tcp-connect", func() {
			c := openTunnel(b, f, raw.Addr().String())
			drain(c)
			c.Close()
		}},
		{"http-direct", func() { get(direct) }},
		{"http-proxied", func() { get(proxied) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(throughputSize)
			cpu := processCPU()
			for b.Loop() {
				c.run()
			}
			// The server, the client and (proxied) the broker are this
			// process: the difference between a proxied case and its
			// direct one is the broker's CPU per MiB.
			mib := float64(b.N) * throughputSize / (1 << 20)
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/mib, "cpu-µs/MiB")
		})
	}
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
