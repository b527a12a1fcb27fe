// Command broker measures the egress broker (internal/broker) on loopback:
// many concurrent tunnels for a bounded time (errors, goroutine and
// descriptor leaks after they close), throughput of a large transfer
// through a tunnel against the same transfer direct, added latency per
// request (p50, p99) and memory per idle tunnel. All traffic stays on
// 127.0.0.1. Method and results: docs/benchmarks-broker.md.
//
// Usage: go run ./e2e/bench/broker [-duration 60s] [-tunnels 1000]
// [-bytes 1073741824] [-samples 20000] [-idle 1000]
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/broker"
)

var (
	duration = flag.Duration("duration", 60*time.Second, "how long the concurrent tunnels run")
	tunnels  = flag.Int("tunnels", 1000, "concurrent tunnels")
	total    = flag.Int64("bytes", 1<<30, "bytes of the throughput transfer")
	samples  = flag.Int("samples", 20000, "round trips per latency measurement")
	idleN    = flag.Int("idle", 1000, "idle tunnels for the memory measurement")
	runs     = flag.Int("runs", 3, "throughput runs (best and median reported)")
)

func main() {
	flag.Parse()
	echo := listen(serveEcho)
	sink := listen(serveSink)
	token := broker.NewToken()
	p, err := broker.New(broker.Config{Allow: []string{"127.0.0.1"}, Token: token, AgentID: "bench", AuditDir: mustTemp()})
	check(err)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go p.Serve(pl)
	proxyAddr := pl.Addr().String()
	auth := "Proxy-Authorization: Basic " + basic("agent-sandbox:"+token) + "\r\n"
	tunnel := func(target string) (net.Conn, error) {
		c, err := net.Dial("tcp", proxyAddr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n%s\r\n", target, auth)
		want := "HTTP/1.1 200 Connection established\r\n\r\n"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			c.Close()
			return nil, fmt.Errorf("CONNECT: %q %v", got, err)
		}
		return c, nil
	}
	direct := func(target string) (net.Conn, error) { return net.Dial("tcp", target) }

	fmt.Printf("machine: %d CPUs (GOMAXPROCS %d), %s/%s, %s\n\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())

	// 1. Latency.
	fmt.Println("## Latency of a 64-byte round trip on an open connection")
	d := latency(direct, echo)
	t := latency(tunnel, echo)
	fmt.Printf("direct: p50 %v p99 %v\ntunnel: p50 %v p99 %v\nadded:  p50 %v p99 %v\n",
		d[0], d[1], t[0], t[1], t[0]-d[0], t[1]-d[1])
	cs := connectLatency(tunnel, echo)
	fmt.Printf("new tunnel (connect, CONNECT, dial, 200, one round trip, close): p50 %v p99 %v\n\n", cs[0], cs[1])

	// 2. Throughput.
	fmt.Printf("## Throughput of %d MiB, %d runs\n", *total>>20, *runs)
	var dr, tr []float64
	for i := 0; i < *runs; i++ {
		dr = append(dr, throughput(direct, sink))
		tr = append(tr, throughput(tunnel, sink))
	}
	sort.Float64s(dr)
	sort.Float64s(tr)
	fmt.Printf("direct: best %.0f MiB/s median %.0f MiB/s\ntunnel: best %.0f MiB/s median %.0f MiB/s\nratio (median): %.1f %%\n\n",
		dr[len(dr)-1], dr[len(dr)/2], tr[len(tr)-1], tr[len(tr)/2], 100*tr[len(tr)/2]/dr[len(dr)/2])

	// 3. Memory per idle tunnel.
	fmt.Printf("## Memory per idle tunnel (%d tunnels, minus %d direct connections)\n", *idleN, *idleN)
	md := idleMemory(direct, echo, *idleN)
	mt := idleMemory(tunnel, echo, *idleN)
	fmt.Printf("direct: %.1f KiB/conn, tunnel: %.1f KiB/conn, broker's share: %.1f KiB per idle tunnel\n\n", md/1024, mt/1024, (mt-md)/1024)

	// 4. Concurrent tunnels, then leaks.
	fmt.Printf("## %d concurrent tunnels for %v\n", *tunnels, *duration)
	settle()
	// The splice pipes the broker keeps for reuse are not leaks.
	g0, f0 := runtime.NumGoroutine(), fds()-2*broker.IdlePipes()
	rt, errs := concurrent(tunnel, echo, *tunnels, *duration)
	var g1, f1 int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		settle()
		g1, f1 = runtime.NumGoroutine(), fds()-2*broker.IdlePipes()
		if g1 <= g0 && f1 <= f0 {
			break
		}
	}
	s := p.Summary()
	fmt.Printf("round trips: %d, errors: %d\nafter close: goroutines %d (before %d), descriptors %d (before %d)\nbroker summary: allowed %d, refused %d\n",
		rt, errs, g1, g0, f1, f0, s.Allowed, s.Refused)
	check(p.Close())
	if errs > 0 || g1 > g0 || f1 > f0 {
		fmt.Println("FAIL: errors or leaks")
		os.Exit(1)
	}
	fmt.Println("PASS: no errors, no goroutine or descriptor leak")
}

func latency(dial func(string) (net.Conn, error), l net.Listener) [2]time.Duration {
	c, err := dial(l.Addr().String())
	check(err)
	defer c.Close()
	msg, buf := make([]byte, 64), make([]byte, 64)
	ds := make([]time.Duration, 0, *samples)
	for i := 0; i < *samples+1000; i++ {
		st := time.Now()
		_, err := c.Write(msg)
		check(err)
		_, err = io.ReadFull(c, buf)
		check(err)
		if i >= 1000 { // warm-up
			ds = append(ds, time.Since(st))
		}
	}
	return pct(ds)
}

func connectLatency(dial func(string) (net.Conn, error), l net.Listener) [2]time.Duration {
	buf := make([]byte, 1)
	n := min(*samples, 3000)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		st := time.Now()
		c, err := dial(l.Addr().String())
		check(err)
		c.Write(buf)
		_, err = io.ReadFull(c, buf)
		check(err)
		c.Close()
		ds = append(ds, time.Since(st))
	}
	return pct(ds)
}

func pct(ds []time.Duration) [2]time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return [2]time.Duration{ds[len(ds)/2], ds[len(ds)*99/100]}
}

// throughput sends *total bytes to the sink and waits for its
// acknowledgement (the byte count, after the sender's EOF); MiB/s.
func throughput(dial func(string) (net.Conn, error), sink net.Listener) float64 {
	c, err := dial(sink.Addr().String())
	check(err)
	defer c.Close()
	buf := make([]byte, 256<<10)
	st := time.Now()
	var sent int64
	for sent < *total {
		n := int64(len(buf))
		if *total-sent < n {
			n = *total - sent
		}
		w, err := c.Write(buf[:n])
		check(err)
		sent += int64(w)
	}
	check(c.(*net.TCPConn).CloseWrite())
	var got int64
	_, err = fmt.Fscan(c, &got)
	check(err)
	if got != *total {
		check(fmt.Errorf("sink received %d of %d bytes", got, *total))
	}
	return float64(*total) / (1 << 20) / time.Since(st).Seconds()
}

// idleMemory opens n idle connections and returns the heap and stack
// growth per connection, in bytes.
func idleMemory(dial func(string) (net.Conn, error), l net.Listener, n int) float64 {
	settle()
	before := mem()
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := dial(l.Addr().String())
		check(err)
		// One round trip so that every goroutine on the way has run.
		c.Write([]byte{1})
		_, err = io.ReadFull(c, make([]byte, 1))
		check(err)
		conns = append(conns, c)
	}
	settle()
	after := mem()
	for _, c := range conns {
		c.Close()
	}
	time.Sleep(500 * time.Millisecond)
	return float64(after-before) / float64(n)
}

func mem() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// settle collects garbage until cached splice pipes (closed by
// finalizers) and finished goroutines are gone.
func settle() {
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
	}
}

// concurrent runs n tunnels, each doing a 1 KiB round trip every 50 ms,
// for d; it returns the round trips done and the errors seen.
func concurrent(dial func(string) (net.Conn, error), l net.Listener, n int, d time.Duration) (int64, int64) {
	var rt, errs atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ready := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(l.Addr().String())
			if err != nil {
				errs.Add(1)
				fmt.Fprintln(os.Stderr, "dial:", err)
				return
			}
			defer c.Close()
			<-ready
			msg, buf := make([]byte, 1024), make([]byte, 1024)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write(msg); err != nil {
					errs.Add(1)
					fmt.Fprintln(os.Stderr, "write:", err)
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					errs.Add(1)
					fmt.Fprintln(os.Stderr, "read:", err)
					return
				}
				rt.Add(1)
			}
		}()
	}
	close(ready)
	wg.Wait()
	return rt.Load(), errs.Load()
}

func listen(serve func(net.Conn)) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l
}

// serveEcho echoes until EOF, then closes.
func serveEcho(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// serveSink discards until EOF, then writes the byte count and closes.
func serveSink(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := c.Read(buf)
		n += int64(m)
		if err != nil {
			break
		}
	}
	fmt.Fprintf(c, "%d\n", n)
}

func fds() int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(des)
}

func basic(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func mustTemp() string {
	d, err := os.MkdirTemp("", "broker-bench-")
	check(err)
	return d
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
}
