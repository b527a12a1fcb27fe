package broker

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// scrubber replaces, in a routed response, each value the broker put in
// the request by the one the agent sent in its place (the real key by the
// phantom): an upstream that reflects request headers (TRACE, a debug
// endpoint, an error quoting the key) must not show the agent the real
// value. Over a stream it holds back only a tail that could still be the
// start of a value (at most the longest value's length less one byte), so
// a response that streams (server-sent events) still streams.
type scrubber struct {
	from, to [][]byte
	pending  []byte
}

// newScrubber replaces each pairs[2i] by pairs[2i+1]; empty values and
// values equal to their replacement are left out.
func newScrubber(pairs ...string) *scrubber {
	s := &scrubber{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == "" || pairs[i] == pairs[i+1] {
			continue
		}
		s.from = append(s.from, []byte(pairs[i]))
		s.to = append(s.to, []byte(pairs[i+1]))
	}
	return s
}

// routeScrubber is the scrubber of a request to rt whose credential
// header the agent sent as agentHeader (its value before rt.set): the real
// key becomes the phantom and, for Basic, the encoded user:real pair the
// agent's encoded user:phantom pair.
func routeScrubber(rt *Route, agentHeader string, h http.Header) *scrubber {
	pairs := []string{rt.Real, rt.Phantom}
	if rt.basic() {
		sent := h.Get("Authorization")
		_, sentB64, _ := strings.Cut(sent, " ")
		_, agentB64, _ := strings.Cut(agentHeader, " ")
		pairs = append(pairs, sentB64, agentB64)
	}
	return newScrubber(pairs...)
}

// String returns v with every value replaced.
func (s *scrubber) String(v string) string {
	if len(s.from) == 0 {
		return v
	}
	b, _ := s.replace(nil, []byte(v))
	return string(b)
}

// replace appends in to dst with every complete value replaced, leftmost
// first (the longest at one place). rest is where in's tail after the last
// replacement starts (appended unchanged).
func (s *scrubber) replace(dst, in []byte) (out []byte, rest int) {
	for {
		at, which := -1, -1
		for i, f := range s.from {
			if j := bytes.Index(in[rest:], f); j >= 0 && (at < 0 || j < at || j == at && len(f) > len(s.from[which])) {
				at, which = j, i
			}
		}
		if at < 0 {
			return append(dst, in[rest:]...), rest
		}
		dst = append(dst, in[rest:rest+at]...)
		dst = append(dst, s.to[which]...)
		rest += at + len(s.from[which])
	}
}

// Write appends to dst what of p (after what was held back) can go to the
// client now: everything with each complete value replaced, less a tail
// that is the beginning of a value, held until the next Write or Flush.
func (s *scrubber) Write(dst, p []byte) []byte {
	if len(s.from) == 0 {
		return append(dst, p...)
	}
	in := append(s.pending, p...)
	s.pending = nil
	out, rest := s.replace(dst, in)
	// The tail after the last replacement went out unchanged: hold back
	// its end if a later byte could complete a value there.
	if hold := s.heldTail(in[rest:]); hold > 0 {
		s.pending = append([]byte(nil), in[len(in)-hold:]...)
		out = out[:len(out)-hold]
	}
	return out
}

// heldTail is the length of the longest suffix of in that is a proper
// prefix of a value (0 when none).
func (s *scrubber) heldTail(in []byte) int {
	longest := 0
	for _, f := range s.from {
		for k := min(len(f)-1, len(in)); k > longest; k-- {
			if bytes.HasSuffix(in, f[:k]) {
				longest = k
				break
			}
		}
	}
	return longest
}

// Flush appends to dst what was held back (the stream ended: it is not a
// whole value).
func (s *scrubber) Flush(dst []byte) []byte {
	dst = append(dst, s.pending...)
	s.pending = nil
	return dst
}

// scrubHeader replaces every value in h's names and values.
func (s *scrubber) scrubHeader(h http.Header) {
	if len(s.from) == 0 {
		return
	}
	for k, vs := range h {
		nk := s.String(k)
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = s.String(v)
		}
		if nk != k {
			delete(h, k)
		}
		h[nk] = out
	}
}

// decodedBody returns the response body with its Content-Encoding undone
// (gzip, deflate), so that the scrubber sees the bytes the agent will, and
// removes the header. An encoding the broker cannot undo is an error (the
// response is not passed on: it could hold the key unreplaced).
func decodedBody(resp *http.Response) (io.Reader, error) {
	var r io.Reader = resp.Body
	ce := resp.Header.Values("Content-Encoding")
	resp.Header.Del("Content-Encoding")
	var codings []string
	for _, v := range ce {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		switch codings[i] {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(r)
		case "deflate":
			r, err = zlib.NewReader(r)
		default:
			return nil, fmt.Errorf("the upstream answered with Content-Encoding %q, which the broker cannot decode to keep the real key out of the answer (it asked for identity)", codings[i])
		}
		if err != nil {
			return nil, fmt.Errorf("cannot decode the upstream's %s answer: %v", codings[i], err)
		}
	}
	return r, nil
}
