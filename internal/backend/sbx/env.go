package sbx

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// GuestHome is HOME inside the guest: agent.toml's [sbx] home with "~"
// meaning the host's home path ("" also means "~"), so that the mounted
// config paths sit where the agent looks for them.
func GuestHome(s spec.Spec, o Options) string {
	switch h := o.Home; {
	case h == "" || h == "~":
		return s.Home
	case strings.HasPrefix(h, "~/"):
		return filepath.Join(s.Home, h[2:])
	default:
		return filepath.Clean(h)
	}
}

// guestEnv is what reaches the guest through `sbx exec -e K=V`. Every -e
// value is visible in the host's process list, so only non-secret values go
// there: HOME, the folder's own set_env constants, and the loopback_env
// variables (URLs such as ANTHROPIC_BASE_URL) with loopback hosts rewritten
// to host.docker.internal. A loopback_env value that carries credentials
// (user:password@) is not passed, with a warning. Host secrets such as API
// keys (agent.toml env) are never passed: store them with `sbx secret set`
// or log in through the mounted config directory.
func guestEnv(s spec.Spec, o Options) (env []string, warns []string) {
	getenv := o.Getenv
	env = []string{"HOME=" + GuestHome(s, o)}
	loop := map[string]bool{}
	for _, n := range o.LoopbackEnv {
		loop[n] = true
	}
	vals := map[string]string{}
	for k, v := range s.EnvSet {
		if k == "HOME" {
			continue
		}
		vals[k] = v
	}
	for _, n := range o.LoopbackEnv {
		if _, set := vals[n]; set || getenv == nil || n == "HOME" {
			continue
		}
		if v := getenv(n); v != "" {
			vals[n] = v
		}
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := vals[k]
		if strings.ContainsAny(v, "\n\x00") {
			warns = append(warns, fmt.Sprintf("sbx: not passing %s into the guest: its value contains a newline or NUL", k))
			continue
		}
		if loop[k] {
			if hasUserinfo(v) {
				warns = append(warns, fmt.Sprintf("sbx: not passing %s into the guest: its value carries credentials (user:password@), and `sbx exec -e` values show in the host process list; store secrets with `sbx secret set`", k))
				continue
			}
			v, _ = RewriteLoopback(v)
		}
		env = append(env, k+"="+v)
	}
	return env, warns
}

// RewriteLoopback points a URL (or a bare host[:port]) whose host is
// loopback (localhost, 127.0.0.0/8, [::1], 0.0.0.0) at host.docker.internal,
// keeping the scheme, port, path and everything else byte for byte. It
// reports whether it changed anything.
func RewriteLoopback(v string) (string, bool) {
	prefix, rest := "", v
	if i := strings.Index(v, "://"); i >= 0 {
		prefix, rest = v[:i+3], v[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		userinfo, auth = auth[:at+1], auth[at+1:]
	}
	host, port := auth, ""
	if strings.HasPrefix(auth, "[") {
		if c := strings.IndexByte(auth, ']'); c >= 0 {
			host, port = auth[:c+1], auth[c+1:]
		}
	} else if c := strings.LastIndexByte(auth, ':'); c >= 0 {
		host, port = auth[:c], auth[c:]
	}
	if host == "" || !isLoopbackHost(host) {
		return v, false
	}
	return prefix + userinfo + GatewayHost + port + tail, true
}

// hasUserinfo reports whether a URL's authority carries user[:password]@.
func hasUserinfo(v string) bool {
	rest := v
	if i := strings.Index(v, "://"); i >= 0 {
		rest = v[i+3:]
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return strings.Contains(rest, "@")
}

// GuestEnvironment describes what reaches the guest, for the plan's JSON:
// pass are the host variables passed in (loopback_env, rewritten), set every
// variable the exec sets (HOME, set_env and those).
func (p Prepared) GuestEnvironment(s spec.Spec) (pass []string, set map[string]string) {
	pass = []string{}
	set = map[string]string{}
	for _, e := range p.Exec.Env {
		k, v, _ := strings.Cut(e, "=")
		set[k] = v
	}
	for _, n := range p.LoopbackEnv {
		if _, fromFolder := s.EnvSet[n]; !fromFolder && n != "HOME" {
			if _, ok := set[n]; ok {
				pass = append(pass, n)
			}
		}
	}
	sort.Strings(pass)
	return pass, set
}
