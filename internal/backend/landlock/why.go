package landlock

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// Rights and Reach are backend.Rights and backend.Reach.
type (
	Rights = backend.Rights
	Reach  = backend.Reach
)

// ReachHost reports how the run treats a TCP connection from the agent
// to host:port (Net.Reach, for the engine this run uses).
func (p *Prepared) ReachHost(host string, port int) (backend.HostReach, error) {
	r, err := p.Net.Reach(host, port, p.Engine == EngineWeaker)
	if err != nil || !r.Allowed || r.Path != "proxy" {
		return r, err
	}
	// A credential route's upstream: the broker refuses a CONNECT there
	// (the tunnel would carry the agent's key past the route).
	for _, c := range p.Spec.Credentials {
		if name, ok := strings.CutPrefix(c.Source, "env:"); ok && strings.TrimSpace(os.Getenv(name)) == "" {
			continue // no value, so no route: the agent logs in its own way
		}
		if !broker.UpstreamAt(c.UpstreamFor(os.LookupEnv), host, port) {
			continue
		}
		target := net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
		if c.Intercept {
			r.By = "credentials " + c.Env
			r.Reason = fmt.Sprintf("%s is the upstream of credential %s's route, which intercepts (when %s has a value): the egress broker answers the CONNECT itself with a certificate of a CA made for the run, which the agent trusts, checks the phantom in each request and puts the real key in its place", target, c.Env, c.Source)
			return r, nil
		}
		how := "its base URL"
		switch {
		case c.BaseURLEnv != "":
			how = "$" + c.BaseURLEnv
		case len(c.BaseURLArgs) > 0:
			how = "the base URL on its command line (base_url_args)"
		}
		r.Allowed = false
		r.By = "credentials " + c.Env
		r.Reason = fmt.Sprintf("%s is the upstream of credential %s's route (when %s has a value): the egress broker refuses a CONNECT there, because the tunnel would carry the agent's key past the route; requests to the route (%s, http://127.0.0.1:%d/%s/...) reach it with the real key added and the phantom checked (a wrong phantom, or the real value sent from inside, is refused)", target, c.Env, c.Source, how, p.Net.ProxyPort, c.Route())
		r.Fix = fmt.Sprintf("point the client at the route (%s, set for the agent); a client that ignores it gets no key (README, \"Credentials the agent never holds\")", how)
		return r, nil
	}
	return r, nil
}

// Reach reports how the run treats the absolute, canonical path p.
func (p *Prepared) Reach(path string) Reach {
	pol := p.Policy
	var mounts []view.Mount
	if p.Engine != EngineWeaker {
		mounts, pol = inView(p)
	}
	r := grantedReach(path, pol)
	if r.Rule != "" {
		r.System = p.isSystemRule(r.Rule)
	}
	if mounts == nil {
		// No view: Landlock alone decides; a toolchain's cache is not
		// the host's but the run's own copy, which the tool is pointed at.
		p.applyCacheCopy(&r, path)
		return r
	}
	applyView(&r, path, mounts)
	return r
}

// grantedReach decides what the Landlock lists of pol grant path: the
// union of the rights of every grant it is within, and the grant (rule
// and list) that names it most closely.
func grantedReach(path string, pol ll.Policy) Reach {
	var r Reach
	lists := []struct {
		name  string
		paths []string
		right Rights
	}{
		{"read_exec", pol.ReadExec, Rights{Read: true, Exec: true}},
		{"read_only", pol.ReadOnly, Rights{Read: true}},
		{"read_write", pol.ReadWrite, Rights{Read: true, Write: true, Exec: true}},
		{"write_only", pol.WriteOnly, Rights{Write: true}},
	}
	best := -1
	for _, l := range lists {
		for _, e := range l.paths {
			if !grant.Within(path, e) {
				continue
			}
			right := l.right
			if l.name == "read_write" && e == path && !isDir(e) {
				right.Exec = false // a ReadWrite file is not executable (a device); PolicyFor adds regular ones to read_exec
			}
			r.Rights.Read = r.Rights.Read || right.Read
			r.Rights.Write = r.Rights.Write || right.Write
			r.Rights.Exec = r.Rights.Exec || right.Exec
			// A read-write file is in read_exec too (PolicyFor): the
			// grant that names it is the read-write one.
			if len(e) > best || len(e) == best && l.name == "read_write" {
				best, r.Rule, r.List = len(e), e, l.name
			}
		}
	}
	return r
}

// isSystemRule decides whether rule is one of the grants every run gets
// (the system's, the devices, Nix's, /etc) rather than one of the spec's.
func (p *Prepared) isSystemRule(rule string) bool {
	return slices.Contains(systemReadExec, rule) || slices.Contains(systemReadOnly, rule) ||
		slices.Contains(devices, rule) || slices.Contains(nixReadExec(p.Spec.Home), rule) ||
		rule == "/etc"
}

// applyCacheCopy records in r the toolchain cache path is within, when
// the run gives the tool its own copy of it (the last such cache wins).
func (p *Prepared) applyCacheCopy(r *Reach, path string) {
	for _, c := range p.Spec.Caches {
		if c.Copy != "" && grant.Within(path, c.Path) {
			r.Cache, r.CacheCopy = c.Path, c.Copy
		}
	}
}

// applyView decides how the view's mounts change r: a mask or a missing
// mount takes every right away, a private filesystem shows the run's own
// copy, a read-only mount takes writing away, an overlay is a cache.
func applyView(r *Reach, path string, mounts []view.Mount) {
	var deepest *view.Mount // the mount that shows the path
	for i := range mounts {
		m := &mounts[i]
		if !grant.Within(path, m.Path) {
			continue
		}
		switch m.Kind {
		case view.Mask:
			r.Masked = m.Path
		case view.Tmpfs, view.Proc, view.Devpts, view.ReadOnly, view.ReadWrite, view.Terminal, view.Overlay:
			if deepest == nil || len(m.Path) >= len(deepest.Path) {
				deepest = m
			}
		}
	}
	switch {
	case r.Masked != "":
		r.Rights = Rights{}
	case deepest == nil:
		r.Hidden, r.Rights = true, Rights{}
	case deepest.Kind == view.Tmpfs || deepest.Kind == view.Proc || deepest.Kind == view.Devpts:
		r.Private, r.Rights = deepest.Path, Rights{}
	case deepest.Kind == view.ReadOnly:
		r.Rights.Write = false
	case deepest.Kind == view.Overlay:
		r.Cache = deepest.Path
	}
}

// isDir says whether a grant is a directory (a missing one is judged as
// one: it is skipped by the run anyway).
func isDir(p string) bool {
	if _, err := os.Stat(p); err != nil {
		return true
	}
	return dirExists(p)
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
