// Package broker owns the host side of allow-list networking: the egress
// proxy that the agent-sandbox parent serves to a sandboxed agent whose only
// network door is that proxy.
//
// The proxy is an HTTP/1.1 forward proxy (CONNECT tunnels and absolute-form
// plain HTTP). Every request carries the per-run token in
// Proxy-Authorization; the target must match the allow list (and no deny
// entry); the broker resolves the name itself, checks every resolved
// address (cloud metadata and link-local always refused, loopback and
// private ranges only for a host the list names exactly) and dials the
// address it checked. Every connection attempt is one JSON line in the
// agent's audit log.
//
// The package does not know about sandboxes: the caller creates the
// listener (for example inside the agent's network namespace), hands it to
// [Proxy.Serve], sets [ProxyEnv] for the agent and prints [Summary.Message]
// when the run ends.
//
// # Allow-list entries
//
// The grammar follows nono's allow_domain / --allow-host:
//
//   - "api.example.com": that name exactly. Case-insensitive, one trailing
//     dot ignored, Unicode names compared in their IDNA ASCII form
//     ("bücher.example" is "xn--bcher-kva.example").
//   - "*.example.com": any name below example.com (one or more labels),
//     never example.com itself.
//   - "jenkins.*.example.com": '*' as a whole non-leading label matches
//     exactly one label. A bare "*" matches every name. A '*' inside a label
//     ("a*b.com") is refused when the list is loaded.
//   - "127.0.0.1", "::1", "[::1]": an IP literal admits that address only,
//     and an IP literal request is admitted only by an entry naming that
//     address (wildcards match names, never addresses).
//   - any of the above with ":PORT" ("localhost:8080", "[::1]:8080"): that
//     port only. Without a port, every port. (nono 0.74 ignores a port in
//     allow_domain with a warning; agent-sandbox honours it, which only
//     narrows what nono would allow.)
//
// Entries naming a cloud metadata endpoint or a link-local address are
// refused when the list is loaded: the broker would never connect to them.
//
// # Differences from nono's proxy
//
// The token is required on every request, CONNECT included (nono only logs
// a missing token on CONNECT, citing clients that do not send
// Proxy-Authorization from the proxy URL's user information; current
// undici, curl and Go do). Loopback and private addresses are admitted
// only for a host the list names exactly (nono admits RFC 1918 space for
// any allowed name). When a name resolves to several addresses and any of
// them is refused, the request is refused.
//
// # Credential routes
//
// A Route (route.go) serves an agent's API requests on the proxy's own
// origin (http://<proxy>/<route name>/...): the agent holds a per-run
// phantom, the broker checks it, puts the real value in the API's header and
// forwards over TLS to the route's upstream (TRACE and TRACK refused), and
// replaces the real value by the phantom in the answer as it streams
// (scrub.go). A CONNECT to a route's host is refused, unless the route
// intercepts (for a client that takes no base URL): then the broker answers
// it with a certificate of the run's own CA (intercept.go) and serves the
// requests inside as requests to the route.
package broker
