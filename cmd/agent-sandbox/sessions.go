package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
)

// listSessions is `agent-sandbox ps`.
func listSessions(e env, p cli.Ps) int {
	live := session.List(e.home.StateRoot())
	if wd, err := resolveWorkdir(""); err == nil {
		// A started session of this workdir that ended on its idle
		// timeout left its findings: printed once, here.
		printPending(e, wd)
	}
	printOrphans(e)
	if p.JSON {
		if live == nil {
			live = []session.Info{}
		}
		b, _ := json.Marshal(live)
		fmt.Fprintln(e.stdio.Out, string(b))
		return 0
	}
	if len(live) == 0 {
		fmt.Fprintln(e.stdio.Out, "no live sessions")
		return 0
	}
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tENGINE\tNETWORK\tSTARTED\tPROCS\tALLOWED\tREFUSED\tWORKDIR")
	for _, i := range live {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", i.ID, i.Agent, i.Engine, i.Network,
			i.Started.Local().Format(time.DateTime), i.Processes, i.Allowed, i.Refused, i.Workdir)
	}
	tw.Flush()
	return 0
}

// execInSession is `agent-sandbox exec SESSION|AGENT -- CMD...`.
func execInSession(e env, x cli.Exec) int {
	root := e.home.StateRoot()
	// An id whose supervisor answers is the session (Find prefers an id
	// to an agent name too): one connection, not one per live session
	// and another for the command. An agent name, or an id that does not
	// answer, goes through Find (which also removes a dead session's
	// directory).
	id := x.Session
	c, err := session.DialExec(root, id)
	if err != nil {
		info, ferr := session.Find(root, x.Session)
		if ferr != nil {
			return fail(e.stdio.Err, ferr)
		}
		id = info.ID
		if c, err = session.DialExec(root, id); err != nil {
			return fail(e.stdio.Err, err)
		}
	}
	defer c.Close()
	if x.TTY || (!x.NoTTY && isTerminal(int(os.Stdin.Fd())) && isTerminal(int(os.Stdout.Fd()))) {
		code, err := execWithTTY(c, x.Argv)
		if err == nil {
			return code
		}
		if x.TTY || err.Error() != session.ErrNoTTY {
			fmt.Fprintf(e.stdio.Err, "agent-sandbox: exec in session %s: %v\n", id, err)
			return launch.ExitRefused
		}
		// An engine whose exec gives the caller's terminal to a
		// command of its own (sbx exec): the caller's stdio, as
		// without a terminal.
		c.Close()
		if c, err = session.DialExec(root, id); err != nil {
			return fail(e.stdio.Err, err)
		}
		defer c.Close()
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH)
	defer signal.Stop(sigs)
	code, err := c.Exec(x.Argv, [3]*os.File{os.Stdin, os.Stdout, os.Stderr}, sigs)
	if err != nil {
		fmt.Fprintf(e.stdio.Err, "agent-sandbox: exec in session %s: %v\n", id, err)
		return launch.ExitRefused
	}
	return code
}

// allowInSession is `agent-sandbox allow HOST[:PORT]`.
func allowInSession(e env, a cli.Allow) int {
	root := e.home.StateRoot()
	var info session.Info
	if a.Session == "" {
		live := session.List(root)
		switch len(live) {
		case 0:
			return fail(e.stdio.Err, fmt.Errorf("allow: no live session (agent-sandbox ps lists them)"))
		case 1:
			info = live[0]
		default:
			return fail(e.stdio.Err, fmt.Errorf("allow: %d sessions are live: name one with --session ID (agent-sandbox ps lists them)", len(live)))
		}
	} else if i, err := session.Find(root, a.Session); err == nil {
		info = i
	} else {
		return fail(e.stdio.Err, err)
	}
	id := info.ID
	c, err := session.Dial(root, id)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	defer c.Close()
	note, err := c.Allow(a.Host)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("allow %s in session %s: %v", a.Host, id, err))
	}
	if note != "" {
		fmt.Fprintln(e.stdio.Out, note)
	}
	if a.Save {
		return saveAllow(e, info, a.Host)
	}
	return 0
}

// saveAllow writes host to the session's agent folder's nono.json: for a
// built-in, to the user's editable copy, made as `agents copy` makes it.
func saveAllow(e env, info session.Info, host string) int {
	dir := info.Folder
	if info.Agent == "run" && dir == "" {
		return fail(e.stdio.Err, fmt.Errorf("allow --save: %s was allowed in session %s, but a `run -- CMD` session has no agent folder to save it to: pass --allow-host %s next time", host, info.ID, host))
	}
	if dir == "" {
		f, _, err := agent.Find(info.Agent, e.lookup(""))
		if err != nil {
			return fail(e.stdio.Err, fmt.Errorf("allow --save: %v", err))
		}
		if !f.Builtin() {
			dir = f.Dir
		} else {
			dir = filepath.Join(e.home.ConfigRoot(), "agents", f.ID)
			if err := f.CopyTo(dir); err != nil {
				return fail(e.stdio.Err, fmt.Errorf("allow --save: copying the built-in %s to edit it: %v", f.ID, err))
			}
			fmt.Fprintf(e.stdio.Out, "copied the built-in %s to %s (as `agents copy %s` does): `agent-sandbox %s` now runs this copy\n", f.ID, dir, f.ID, f.ID)
		}
	}
	path, added, err := agent.SaveAllow(dir, host)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("allow --save: %s was allowed in session %s, not saved: %v", host, info.ID, err))
	}
	if added {
		fmt.Fprintf(e.stdio.Out, "saved %s to network.allow_domain of %s\n", host, path)
	} else {
		fmt.Fprintf(e.stdio.Out, "%s lists %s already\n", path, host)
	}
	return 0
}
