package broker

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestThousandTunnels: 1,000 CONNECT tunnels open at the same time all
// hold (issue 27: a package manager or a parallel clone opens many), each
// carries its own bytes both ways, and when the clients close them the
// broker serves none any more. Both ways of copying (the broker's splice,
// which holds no pipe while a tunnel waits, and user space).
func TestThousandTunnels(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 4,000 sockets; skipped with -short")
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 5000 {
		t.Skipf("needs 5,000 open files, the limit is %d (ulimit -n)", lim.Cur)
	}
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			// Put back after the proxy's clean-up (t.Cleanup runs last
			// in, first out), which ends its goroutines that read it.
			old := spliceOK
			t.Cleanup(func() { spliceOK = old })
			spliceOK = splice
			testThousandTunnels(t, 1000)
		})
	}
}

func testThousandTunnels(t *testing.T, n int) {
	// An echo server that counts the connections it holds at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var open, peak atomic.Int64
	var served sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			if k := open.Add(1); k > peak.Load() {
				peak.Store(k) // one accepting goroutine: no lost maximum
			}
			go func() {
				defer served.Done()
				defer open.Add(-1)
				defer c.Close()
				buf := make([]byte, 256)
				for {
					k, err := c.Read(buf)
					if k > 0 {
						c.Write(buf[:k])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); served.Wait() })
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	target := l.Addr().String()

	conns := make([]net.Conn, n)
	var errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	// Open them 64 at a time (a client's parallelism; the listen
	// backlog is not what is measured).
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				c, err := net.Dial("tcp", f.addr)
				if err != nil {
					fail(fmt.Errorf("dialling the broker (tunnel %d): %v", i, err))
					return
				}
				c.SetDeadline(time.Now().Add(30 * time.Second))
				fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n%s\r\n", target, f.auth())
				want := "HTTP/1.1 200 Connection established\r\n\r\n"
				got := make([]byte, len(want))
				if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
					fail(fmt.Errorf("CONNECT %d: %q %v", i, got, err))
					c.Close()
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if errs.Load() > 0 {
		t.Fatalf("%d of %d tunnels failed to open; the first: %v", errs.Load(), n, firstErr.Load())
	}
	f.p.mu.Lock()
	active := f.p.active
	f.p.mu.Unlock()
	if active != n {
		t.Fatalf("with %d tunnels open the broker serves %d", n, active)
	}
	// Each tunnel: the client's socket, the broker's two, the server's
	// one. Splice holds no pipe for a tunnel that waits (splice_linux.go).
	fds := countFDs(t) - pooledFDs()
	t.Logf("%d tunnels open: this process holds %d descriptors (broker, clients and server)", n, fds)
	if fds > 4*n+100 {
		t.Errorf("with %d idle tunnels this process holds %d descriptors, want at most 4 per tunnel (and 100 others)", n, fds)
	}
	// Every tunnel carries its own bytes, all at once.
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("tunnel %04d", i)
			if _, err := io.WriteString(c, msg); err != nil {
				fail(fmt.Errorf("tunnel %d: write: %v", i, err))
				return
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
				fail(fmt.Errorf("tunnel %d: echo %q %v, want %q", i, got, err, msg))
			}
		}()
	}
	wg.Wait()
	if errs.Load() > 0 {
		t.Fatalf("%d of %d tunnels failed; the first: %v", errs.Load(), n, firstErr.Load())
	}
	if peak.Load() < int64(n) {
		t.Errorf("the server held at most %d connections at once, want %d", peak.Load(), n)
	}
	for i, c := range conns {
		c.Close()
		conns[i] = nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.p.mu.Lock()
		active = f.p.active
		f.p.mu.Unlock()
		if active == 0 && open.Load() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the clients closed: the broker still serves %d tunnels, the server holds %d", active, open.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := f.p.Summary(); s.Allowed != n {
		t.Errorf("summary %+v, want %d allowed", s, n)
	}
}
