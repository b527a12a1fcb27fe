package pathresolve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shells are interpreter names whose scripts are parsed for `exec` targets.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "ksh": true, "mksh": true, "zsh": true}

// script adds the closure of the script at canon (its interpreter, or
// /bin/sh when it has no "#!" line) and returns what finally runs: the
// target of its last literal `exec` for a shell trampoline, else the script.
func (r *resolver) script(canon string, head []byte, depth int) string {
	shell := "sh"
	if sb, ok := parseShebang(head); !ok {
		// execve fails with ENOEXEC and the calling shell runs it with /bin/sh.
		r.step("sh", canon, "/bin/sh")
		r.sub("/bin/sh", canon, depth+1)
	} else {
		r.step("shebang", canon, sb.interp)
		if sb.interp == "" {
			r.miss("#!", canon, "the #! line names no interpreter")
			return canon
		}
		r.sub(sb.interp, canon, depth+1)
		shell = filepath.Base(sb.interp)
		if shell == "env" {
			shell = r.envTarget(canon, sb.arg, depth)
		}
	}
	if !shells[shell] {
		return canon
	}
	src, err := os.ReadFile(canon)
	if err != nil || len(src) > maxScriptSize {
		return canon
	}
	final := canon
	for _, c := range execTargets(src) {
		r.step("wrapper", canon, c.prog)
		if f := r.sub(c.prog, canon, depth+1); f != "" {
			final = f
		}
		for _, a := range c.args {
			if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
				if p, err := r.follow(a); err == nil {
					r.step("arg", canon, a)
					r.addFile(p)
				}
			}
		}
	}
	return final
}

// envTarget resolves the program a "#!/usr/bin/env ARG" line runs and
// returns its base name ("" if there is none).
func (r *resolver) envTarget(script, arg string, depth int) string {
	prog, ok := envProgram(arg)
	if !ok {
		r.miss("env", script, "the #!/usr/bin/env line names no program")
		return ""
	}
	found, err := r.lookPath(prog)
	if err != nil {
		r.miss(prog, script, err.Error())
		return filepath.Base(prog)
	}
	r.step("env", prog, found)
	r.sub(found, script, depth+1)
	return filepath.Base(prog)
}

// shebang is a parsed "#!" line, split the way Linux splits it: the
// interpreter, then everything else as one optional argument.
type shebang struct{ interp, arg string }

func parseShebang(head []byte) (shebang, bool) {
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return shebang{}, false
	}
	if i := bytes.IndexAny(line, "\n\x00"); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), " \t")
	interp, arg, _ := strings.Cut(s, " ")
	if i := strings.IndexByte(interp, '\t'); i >= 0 {
		interp, arg = interp[:i], interp[i+1:]+" "+arg
	}
	return shebang{interp: interp, arg: strings.Trim(arg, " \t")}, true
}

// envProgram returns the program named by the argument of a
// "#!/usr/bin/env ..." line. It splits on blanks (as `env -S` does; without
// -S Linux passes one argument, and env only works when it has no blanks),
// skips env's options and NAME=VALUE assignments, and strips quotes.
func envProgram(arg string) (string, bool) {
	fields := strings.Fields(arg)
	options := true
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case options && f == "--":
			options = false
		case options && f == "-":
			// same as -i
		case options && strings.HasPrefix(f, "--"):
			// --split-string=S and --split-string S: S is split with the rest.
			name, val, hasVal := strings.Cut(f[2:], "=")
			switch {
			case name == "split-string" && hasVal:
				fields = append(fields[:i+1], append(strings.Fields(val), fields[i+1:]...)...)
			case (name == "unset" || name == "chdir") && !hasVal:
				i++
			}
		case options && strings.HasPrefix(f, "-"):
			// A cluster of short options; u, C and P take a value, S splits
			// its value into further arguments.
			for j := 1; j < len(f); j++ {
				c := f[j]
				if c != 'u' && c != 'C' && c != 'P' && c != 'S' {
					continue
				}
				rest := f[j+1:]
				switch {
				case c == 'S' && rest != "":
					fields = append(fields[:i+1], append([]string{rest}, fields[i+1:]...)...)
				case c != 'S' && rest == "":
					i++
				}
				break
			}
		case isAssignment(f):
			// NAME=VALUE
		default:
			return strings.Trim(f, `"'`), strings.Trim(f, `"'`) != ""
		}
	}
	return "", false
}

func isAssignment(f string) bool {
	name, _, ok := strings.Cut(f, "=")
	return ok && name != "" && !strings.Contains(name, "/")
}

// execCall is an `exec` of a literal absolute path in a shell script.
type execCall struct {
	prog string   // the program exec runs
	args []string // its literal absolute-path arguments, e.g. a script for node
}

// execTargets parses a shell script (bash syntax; never run) and returns, in
// source order, every `exec` whose program word is a literal absolute path.
// exec's own options are skipped (-a NAME, -c, -l). A script that does not
// parse has no targets.
func execTargets(src []byte) []execCall {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(src), "")
	if err != nil {
		return nil
	}
	var calls []execCall
	syntax.Walk(file, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok || len(ce.Args) < 2 {
			return true
		}
		if w, _ := literal(ce.Args[0]); w != "exec" {
			return true
		}
		args := ce.Args[1:]
		for len(args) > 0 {
			opt, ok := literal(args[0])
			if !ok || !strings.HasPrefix(opt, "-") {
				break
			}
			args = args[1:]
			if opt == "--" {
				break
			}
			if strings.Contains(opt, "a") && len(args) > 0 {
				args = args[1:] // -a NAME
			}
		}
		if len(args) == 0 {
			return true
		}
		prog, ok := literal(args[0])
		if !ok || !filepath.IsAbs(prog) {
			return true
		}
		c := execCall{prog: prog}
		for _, a := range args[1:] {
			if s, ok := literal(a); ok && filepath.IsAbs(s) {
				c.args = append(c.args, s)
			}
		}
		calls = append(calls, c)
		return true
	})
	return calls
}

// literal returns the value of a word made only of unquoted, single-quoted
// and double-quoted literal text without escapes or expansions.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	add := func(lit string) bool {
		if strings.ContainsAny(lit, `\`) {
			return false
		}
		b.WriteString(lit)
		return true
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[~") || !add(p.Value) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || !add(l.Value) {
					return "", false
				}
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
