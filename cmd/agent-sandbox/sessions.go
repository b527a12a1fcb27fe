package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
)

// listSessions is `agent-sandbox ps`.
func listSessions(e env, p cli.Ps) int {
	live := session.List(e.home.StateRoot())
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
	info, err := session.Find(root, x.Session)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	c, err := session.Dial(root, info.ID)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	defer c.Close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH)
	defer signal.Stop(sigs)
	code, err := c.Exec(x.Argv, [3]*os.File{os.Stdin, os.Stdout, os.Stderr}, sigs)
	if err != nil {
		fmt.Fprintf(e.stdio.Err, "agent-sandbox: exec in session %s: %v\n", info.ID, err)
		return launch.ExitRefused
	}
	return code
}

// allowInSession is `agent-sandbox allow HOST[:PORT]`.
func allowInSession(e env, a cli.Allow) int {
	root := e.home.StateRoot()
	id := a.Session
	if id == "" {
		live := session.List(root)
		switch len(live) {
		case 0:
			return fail(e.stdio.Err, fmt.Errorf("allow: no live session (agent-sandbox ps lists them)"))
		case 1:
			id = live[0].ID
		default:
			return fail(e.stdio.Err, fmt.Errorf("allow: %d sessions are live: name one with --session ID (agent-sandbox ps lists them)", len(live)))
		}
	} else if i, err := session.Find(root, id); err == nil {
		id = i.ID
	} else {
		return fail(e.stdio.Err, err)
	}
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
		return saveAllow(e, id, a.Host)
	}
	return 0
}

// saveAllow writes host to the session's agent folder (not yet).
func saveAllow(e env, id, host string) int {
	return fail(e.stdio.Err, fmt.Errorf("allow --save: %s was allowed in session %s, but writing it to the agent folder is not supported yet: add it to the folder's sandbox/nono.json allow_domain yourself", host, id))
}
