package broker

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestScrubberStream: fed in pieces cut at every place (the key split
// across reads, several keys, overlapping beginnings), the scrubber gives
// what one replacement over the whole stream gives; what it holds back is
// only a tail that could begin a key, so a server-sent event goes out
// whole at once.
func TestScrubberStream(t *testing.T) {
	real, phantom := "sk-real-KEY-0123456789", "sk-agent-sandbox-phantom-abcdef"
	s := newScrubber(real, phantom)
	stream := "data: {\"echo\":\"" + real + "\"}\n\nsk-rsk-real-KEYsk-real-KEY-0123456789" + real + real[:5] + "\n\n" + "tail sk-real"
	want, _ := s.replace(nil, []byte(stream))
	if bytes.Contains(want, []byte(real)) {
		t.Fatalf("the one-shot replacement keeps the key: %q", want)
	}
	feed := func(pieces [][]byte) []byte {
		s := newScrubber(real, phantom)
		var got []byte
		for _, p := range pieces {
			got = s.Write(got, p)
		}
		return s.Flush(got)
	}
	b := []byte(stream)
	for c := 1; c < len(b); c++ {
		if got := feed([][]byte{b[:c], b[c:]}); !bytes.Equal(got, want) {
			t.Fatalf("cut at %d: %q, want %q", c, got, want)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 500; round++ {
		var pieces [][]byte
		for rest := b; len(rest) > 0; {
			n := 1 + rng.Intn(min(len(rest), 12))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		if got := feed(pieces); !bytes.Equal(got, want) {
			t.Fatalf("round %d: %q, want %q", round, got, want)
		}
	}
	s = newScrubber(real, phantom)
	if out := s.Write(nil, []byte("data: {\"delta\":\"hi\"}\n\n")); string(out) != "data: {\"delta\":\"hi\"}\n\n" {
		t.Errorf("an event without the key's beginning was held back: %q", out)
	}
	if out := s.Write(nil, []byte("quoted: sk-real-K")); string(out) != "quoted: " {
		t.Errorf("the beginning of the key went out before the rest could be seen: %q", out)
	}
	if out := s.Write(nil, []byte("EY-0123456789!")); string(out) != phantom+"!" {
		t.Errorf("a key split across writes: %q", out)
	}
}

// TestRouteReflection: an upstream that echoes the request (a debug
// endpoint, an error quoting the key) shows the agent the phantom, never
// the real key: in the response's headers and body, in a gzip answer the
// broker did not ask for (it asks for identity), with the key split
// across chunks of a streamed answer that still streams (the first event
// reaches the agent while the upstream waits for it), and for Basic (the
// encoded user:password pair); TRACE and TRACK are refused and never
// forwarded; "/ROUTE/../x" stays below the upstream's base path.
func TestRouteReflection(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	firstRead := make(chan struct{})
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" ae="+r.Header.Get("Accept-Encoding")+" range="+r.Header.Get("Range"))
		mu.Unlock()
		var dump bytes.Buffer
		r.Header.Write(&dump)
		w.Header().Set("X-Echo", r.Header.Get("x-api-key")+" "+r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/base/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(dump.Bytes())
			zw.Close()
		case "/base/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			key := r.Header.Get("x-api-key")
			fmt.Fprint(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-firstRead
			fmt.Fprint(w, "data: "+key[:7])
			w.(http.Flusher).Flush()
			fmt.Fprint(w, key[7:]+"\n\n")
		case "/base/brotli":
			w.Header().Set("Content-Encoding", "br")
			w.Write(dump.Bytes())
		default:
			w.Header().Set("Content-Length", fmt.Sprint(dump.Len()))
			w.Write(dump.Bytes())
		}
	}))
	defer up.Close()
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	port := up.Listener.Addr().(*net.TCPAddr).Port
	real, phantom := "sk-real-0123456789abcdef", "sk-phantom-"+NewToken()
	upstream := fmt.Sprintf("https://127.0.0.1:%d/base", port)
	f := startProxy(t, Config{
		Allow: []string{"127.0.0.1"}, RootCAs: pool, Dial: (&net.Dialer{}).DialContext,
		Routes: []Route{
			{Name: "echo", Env: "ECHO_KEY", BaseEnv: "ECHO_BASE_URL", Upstream: upstream, Header: "x-api-key", Phantom: phantom, Real: real},
			{Name: "git", Env: "GH_TOKEN", BaseEnv: "GIT", Upstream: upstream, Header: "basic", Phantom: phantom, Real: real},
		},
	})
	do := func(method, p, extra string) (*http.Response, *bufio.Reader) {
		t.Helper()
		resp, _, br := f.raw(t, method+" "+p+" HTTP/1.1\r\nHost: 127.0.0.1\r\n"+extra+"Accept-Encoding: gzip, br\r\nRange: bytes=10-20\r\n\r\n")
		return resp, br
	}
	check := func(what string, resp *http.Response, body []byte, shown string) {
		t.Helper()
		var h bytes.Buffer
		resp.Header.Write(&h)
		if strings.Contains(h.String()+string(body), real) || strings.Contains(h.String()+string(body), base64.StdEncoding.EncodeToString([]byte("x:"+real))) {
			t.Errorf("%s: the real key reached the agent:\n%s\n%s", what, h.String(), body)
		}
		if !strings.Contains(h.String(), shown) || !strings.Contains(string(body), shown) {
			t.Errorf("%s: the echo does not show the phantom:\n%s\n%s", what, h.String(), body)
		}
	}
	for _, p := range []string{"/echo/plain", "/echo/gzip"} {
		resp, _ := do("GET", p, "x-api-key: "+phantom+"\r\n")
		body, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		check(p, resp, body, phantom)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x:" + phantom))
	resp, _ := do("GET", "/git/plain", "Authorization: Basic "+basic+"\r\n")
	body, _ := io.ReadAll(resp.Body)
	check("basic", resp, body, basic)
	resp, _ = do("GET", "/echo/brotli", "x-api-key: "+phantom+"\r\n")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), real) {
		t.Errorf("an answer in an encoding the broker cannot read: %d %q, want 502", resp.StatusCode, body)
	}

	resp, br := do("GET", "/echo/stream", "x-api-key: "+phantom+"\r\n")
	ev, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || ev != "data: first\n" {
		t.Fatalf("the first event of a stream: %q %v", ev, err)
	}
	close(firstRead)
	_ = br
	rest, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), real) || !strings.Contains(string(rest), "data: "+phantom+"\n\n") {
		t.Errorf("a key split across chunks of a stream: %q", rest)
	}

	for _, m := range []string{"TRACE", "TRACK"} {
		resp, _ := do(m, "/echo/plain", "x-api-key: "+phantom+"\r\n")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusMethodNotAllowed || strings.Contains(string(body), real) {
			t.Errorf("%s on a route: %d %q, want 405", m, resp.StatusCode, body)
		}
	}
	resp, _ = do("GET", "/echo/../outside", "x-api-key: "+phantom+"\r\n")
	io.ReadAll(resp.Body)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.HasPrefix(s, "TRACE") || strings.HasPrefix(s, "TRACK") {
			t.Errorf("forwarded: %s", s)
		}
		if !strings.Contains(s, " ae=identity range=") || !strings.HasSuffix(s, "range=") {
			t.Errorf("the upstream was not asked for a whole identity answer: %s", s)
		}
		if !strings.HasPrefix(strings.Fields(s)[1], "/base/") {
			t.Errorf("a request left the upstream's base path: %s", s)
		}
	}
	if len(seen) != 6 {
		t.Errorf("the upstream saw %q", seen)
	}
}

// TestRoutePath: the path after /ROUTE is cleaned as a rooted path before
// it is put below the upstream's base path, so no ".." (or an encoded one,
// which arrives decoded) climbs out of it; a trailing slash is kept.
func TestRoutePath(t *testing.T) {
	for _, tc := range []struct{ base, rest, want string }{
		{"/v1", "/messages", "/v1/messages"},
		{"/v1", "/../x", "/v1/x"},
		{"/v1", "/a/../../../x", "/v1/x"},
		{"/v1/", "/a/b/", "/v1/a/b/"},
		{"", "/../../etc", "/etc"},
		{"", "/", "/"},
		{"/api/v3", "/..", "/api/v3"},
		{"/api/v3", "/./repos//x/", "/api/v3/repos/x/"},
	} {
		if got := routePath(tc.base, tc.rest); got != tc.want {
			t.Errorf("routePath(%q, %q) = %q, want %q", tc.base, tc.rest, got, tc.want)
		}
	}
}

// BenchmarkScrubber: the scan of a routed response body, in the reads of
// 32 KiB the broker makes (bytes per second of a body without the key,
// the usual case, with a beginning of the key at every read's end).
func BenchmarkScrubber(b *testing.B) {
	real, phantom := "sk-ant-api03-"+strings.Repeat("k", 95), "sk-agent-sandbox-phantom-"+strings.Repeat("p", 64)
	chunk := bytes.Repeat([]byte("data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hello\"}}\n\n"), 32<<10/64)
	tail := append(append([]byte{}, chunk...), real[:12]...)
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"plain", chunk}, {"key-beginning-at-end", tail}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newScrubber(real, phantom)
			var out []byte
			b.SetBytes(int64(len(tc.in)))
			for i := 0; i < b.N; i++ {
				out = s.Write(out[:0], tc.in)
			}
		})
	}
}
