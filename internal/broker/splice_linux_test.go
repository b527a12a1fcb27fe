package broker

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// emptyPipePool closes the pipes the broker keeps for reuse, so that the
// next tunnel asks for new ones.
func emptyPipePool(t *testing.T) {
	t.Helper()
	for IdlePipes() > 0 {
		p, err := getPipe()
		if err != nil {
			t.Fatal(err)
		}
		closePipe(p)
	}
}

// TestSpliceWithoutPipes: when no pipe can be had (the broker is out of
// descriptors), a tunnel and a plain-HTTP body still go through whole, in
// user space, as Go's splice fell back before the broker had its own.
func TestSpliceWithoutPipes(t *testing.T) {
	if !spliceOK {
		t.Skip("splice is off (AGENT_SANDBOX_BROKER_NOSPLICE)")
	}
	// Empty the pool, then refuse every new pipe.
	emptyPipePool(t)
	old := pipe2
	t.Cleanup(func() { pipe2 = old }) // after the proxy's clean-up
	var tries int
	pipe2 = func([]int, int) error { tries++; return unix.EMFILE }

	echo := echoServer(t)
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}, Dial: (&net.Dialer{}).DialContext})
	c := openTunnel(t, f, echo.Addr().String())
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := bytes.Repeat([]byte("through a buffer "), 20000)
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("tunnel without pipes: %v, equal %v", err, bytes.Equal(got, msg))
	}
	if tries == 0 {
		t.Errorf("the tunnel asked for no pipe: the test did not take the path it checks")
	}
	tries = 0

	body := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 300000)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer web.Close()
	b, err := fetch(t, proxiedClient(f), web.URL+"/big")
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("forwarded body without pipes: %d bytes (%v), want the %d sent", len(b), err, len(body))
	}
	if tries == 0 {
		t.Errorf("the forwarded body asked for no pipe: the test did not take the path it checks")
	}
}

// TestSplicePipeBound: tunnels whose clients do not read hold pipes full
// of bytes; past maxPipes (4 here) the others copy in user space, and
// once the clients read, every byte arrives, in order.
func TestSplicePipeBound(t *testing.T) {
	if !spliceOK {
		t.Skip("splice is off (AGENT_SANDBOX_BROKER_NOSPLICE)")
	}
	emptyPipePool(t)
	old := maxPipes
	t.Cleanup(func() { maxPipes = old }) // after the proxy's clean-up
	maxPipes = 4
	const size = 8 << 20
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i * 31 / 7)
	}
	l := serveEach(t, func(c net.Conn) { c.Write(payload) })
	f := startProxy(t, Config{Allow: []string{"127.0.0.1"}})
	var conns []net.Conn
	for i := 0; i < 8; i++ {
		c := openTunnel(t, f, l.Addr().String())
		defer c.Close()
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond) // the servers fill what they can
	pipePool.Lock()
	open := pipePool.open
	pipePool.Unlock()
	if open > 4 {
		t.Errorf("%d pipes open with the bound at 4", open)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("tunnel %d: %d of %d bytes (%v), equal %v", i, len(got), size, err, bytes.Equal(got, payload))
		}
	}
}

// TestTunnelTrickle: a tunnel whose server sends a byte every 50 ms for
// 1.5 s while the client sends nothing stays open past the 300 ms idle
// timeout: bytes moving one way are the tunnel's activity, also while
// one splice step is still under way (it used to be recorded only when
// a step ended, and the silent direction could close the tunnel at its
// own deadline). Both ways of copying.
func TestTunnelTrickle(t *testing.T) {
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			// Put back after the proxy's clean-up (t.Cleanup runs last
			// in, first out), which ends its goroutines that read it.
			old := spliceOK
			t.Cleanup(func() { spliceOK = old })
			spliceOK = splice
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				for i := 0; i < 30; i++ {
					if _, err := c.Write([]byte{'a' + byte(i%26)}); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			f := startProxy(t, Config{Allow: []string{"127.0.0.1"}, IdleTimeout: 300 * time.Millisecond, HalfOpenTimeout: 300 * time.Millisecond})
			c := openTunnel(t, f, l.Addr().String())
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if len(got) != 30 {
				t.Fatalf("the client got %d of the 30 bytes the server trickled (%v): the tunnel was closed as idle while bytes moved", len(got), err)
			}
		})
	}
}
