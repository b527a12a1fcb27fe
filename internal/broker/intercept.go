package broker

import (
	"bufio"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// CA is a run's own certificate authority, for the routes that intercept
// (Route.Intercept): the broker answers a CONNECT to such a route's host
// itself, with a certificate for that host that the CA signs, so that it
// can read the agent's requests and put the real key in them. Its private
// key never leaves the broker; the agent trusts the certificate (PEM) for
// the run only.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// PEM is the CA's certificate, for the agent's trust store.
	PEM []byte

	mu    sync.Mutex
	leafs map[string]*tls.Certificate
}

// NewCA makes a fresh CA, valid from a minute ago for a day, named for
// the agent, that may sign only for hosts (the intercepting routes' upstream
// hosts, names or IP addresses): its name constraints, marked critical,
// permit those names (and, as RFC 5280 has it, names below them) and those
// addresses only, so that a client trusting it trusts it for nothing else
// even if its key were taken. At least one host is needed.
func NewCA(agentID string, hosts []string) (*CA, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("broker: a run CA needs the hosts it may sign for (the intercepting routes' hosts)")
	}
	key, serial, err := newKeySerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "agent-sandbox run CA (" + agentID + ")"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if err := constrain(tmpl, hosts); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leafs: map[string]*tls.Certificate{}}, nil
}

// constrain sets tmpl's name constraints (critical) to permit hosts only:
// DNS names for names, single addresses for IP literals; a name type
// without a permitted host is excluded altogether (an empty permitted list
// would leave it open). E-mail and URI names are left out: no TLS server
// check uses them, and a verifier that knows no such constraint may refuse
// a critical extension holding one.
func constrain(tmpl *x509.Certificate, hosts []string) error {
	tmpl.PermittedDNSDomainsCritical = true
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
		if ip := net.ParseIP(h); ip != nil {
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		if h == "" || strings.ContainsAny(h, "*/ ") {
			return fmt.Errorf("broker: a run CA cannot be limited to host %q", h)
		}
		tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, strings.ToLower(h))
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}
	}
	if len(tmpl.PermittedDNSDomains) == 0 {
		// No name at all: "invalid" is reserved (RFC 2606) and never a
		// route's host.
		tmpl.PermittedDNSDomains = []string{"invalid"}
	}
	return nil
}

// leaf returns a certificate for host (a name or an IP address) signed by
// the CA, made once per host.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leafs[host]; c != nil {
		return c, nil
	}
	key, serial, err := newKeySerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	ca.leafs[host] = c
	return c, nil
}

// newKeySerial makes a P-256 key and a random 127-bit serial number for a
// certificate.
func newKeySerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return key, serial, err
}

// prefixConn is a connection whose first bytes were already read into a
// bufio.Reader (what the client sent right after its CONNECT).
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// intercept serves a CONNECT to rt's host for a route that intercepts:
// the broker answers the TLS handshake itself with the CA's certificate
// for that host, then serves each request inside as a request to the
// route (the phantom checked, the real key put in, forwarded to the
// upstream over TLS). The CONNECT itself is recorded as allowed.
func (p *Proxy) intercept(c net.Conn, br *bufio.Reader, r *request, a *attempt, rt *Route) {
	a.decision, a.reason = DecisionAllowed, fmt.Sprintf("CONNECT to %s answered by the broker for credential route %s (TLS with this run's CA)", r.target.host, rt.Name)
	p.record(a)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	host := r.target.host
	tc := tls.Server(prefixConn{Conn: c, r: br}, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && !strings.EqualFold(hello.ServerName, host) {
				return nil, fmt.Errorf("the client asked for %q inside a CONNECT to %s", hello.ServerName, host)
			}
			return p.cfg.CA.leaf(host)
		},
	})
	_ = c.SetDeadline(time.Now().Add(p.cfg.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	tbr := bufio.NewReaderSize(tc, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		if _, err := tbr.Peek(1); err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		ia := &attempt{start: time.Now()}
		req, err := http.ReadRequest(tbr)
		if err != nil || req.URL == nil || !strings.HasPrefix(req.URL.Path, "/") || req.URL.Host != "" {
			ia.method, ia.host, ia.port = "ROUTE ?", host, r.target.port
			ia.decision, ia.reason, ia.refusedAs = DecisionRefused, "malformed request inside an intercepted CONNECT", refusedMalformed
			p.record(ia)
			if !errors.Is(err, io.EOF) {
				writeRefusal(tc, http.StatusBadRequest, ia.reason)
			}
			return
		}
		req.URL.Path = "/" + rt.Name + req.URL.Path
		req.URL.RawPath = ""
		if !p.route(tc, tbr, &request{req: req, method: req.Method, route: true}, ia) {
			return
		}
	}
}
