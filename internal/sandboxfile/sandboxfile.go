// Package sandboxfile reads an agent folder's sandbox/nono.json and
// sandbox/sbx.json: the two backend opt-ins and the posture they declare.
//
// Both files are HuJSON (JSON with comments and trailing commas). nono.json is
// strict: an unknown key, a duplicate key or a value of the wrong type is an
// error that names the file, the key path and the value. sbx.json accepts the
// restricted subset the seed describes: nono-only keys are dropped with the
// dedicated "nono-only" warning, other unknown keys with the generic
// unsupported-key warning, and known keys are read by the same field readers
// as nono.json, so a malformed value fails the same way in both files.
//
// Paths are returned as written; package grant expands and checks them.
package sandboxfile

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/optfile"
	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
	"github.com/tailscale/hujson"
)

// Kind names which of the two files was read.
type Kind string

// The two folder files.
const (
	Nono Kind = "nono"
	Sbx  Kind = "sbx"
)

// RelPath is the file's path inside an agent folder.
func (k Kind) RelPath() string { return filepath.Join("sandbox", string(k)+".json") }

// File is one parsed folder file.
type File struct {
	Kind Kind
	// Path is the file's location, as used in messages.
	Path string
	// Sandbox is false when the file opts out with {"sandbox": false}.
	Sandbox    bool
	Filesystem Filesystem
	Network    Network
	// SeatbeltRules are raw macOS Seatbelt s-expressions (nono.json only).
	SeatbeltRules []string
	// Warnings are complete warning lines (without the "agent-sandbox:
	// warning:" prefix) about keys that were dropped.
	Warnings []string
}

// OptedOut reports whether the file says {"sandbox": false}.
func (f *File) OptedOut() bool { return f != nil && !f.Sandbox }

// Filesystem holds the grants as written (unexpanded).
type Filesystem struct {
	Read              []string // read-only
	Write             []string // write-only
	Allow             []string // read-write
	UnixSocketDirBind []string // nono only
}

// Network holds the declared network posture.
type Network struct {
	Block bool
	// AllowList is true when the allow_domain key is present, even with an
	// empty list: a present allow list means allow-list mode, and an empty
	// one allows no host at all (never "no restriction").
	AllowList      bool
	AllowDomain    []string
	OpenPort       []int
	ListenPort     []int
	NetworkProfile string // nono only; "" when unset
}

// Error is a problem in a folder file. Its message names the file, the
// position, the key path and the offending value.
type Error struct {
	Path    string
	Line    int
	Column  int
	KeyPath string
	Message string
}

func (e *Error) Error() string {
	loc := e.Path
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Column)
	}
	if e.KeyPath == "" {
		return fmt.Sprintf("%s: %s", loc, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.KeyPath, e.Message)
}

// Load reads the file of kind k in folder dir. It returns nil, nil only when
// the file does not exist as a name (nor its sandbox/ directory); a file
// that exists but cannot be read (a dangling symlink, a directory, a file
// without read permission) is an error, never "absent" (see package
// optfile).
func Load(dir string, k Kind) (*File, error) {
	p := filepath.Join(dir, k.RelPath())
	b, ok, err := optfile.ReadIn(dir, filepath.ToSlash(k.RelPath()))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return Parse(p, k, b)
}

// nonoOnly are the keys nono.json accepts that sbx has no equivalent for.
var nonoOnly = map[string]bool{
	"filesystem.unix_socket_dir_bind": true,
	"network.network_profile":         true,
	"network.open_port":               true,
	"network.listen_port":             true,
	"unsafe_macos_seatbelt_rules":     true,
}

// Parse parses the contents b of a folder file of kind k; path is used in
// messages only.
func Parse(path string, k Kind, b []byte) (*File, error) {
	r := &reader{path: path, src: b, kind: k}
	v, err := hujson.Parse(b)
	if err != nil {
		return nil, &Error{Path: path, Message: "not valid JSON (HuJSON): " + err.Error()}
	}
	f := &File{Kind: k, Path: path, Sandbox: true}
	root, err := r.object(v, "")
	if err != nil {
		return nil, err
	}
	for _, m := range root {
		switch m.key {
		case "sandbox":
			if f.Sandbox, err = r.boolean(m); err != nil {
				return nil, err
			}
		case "filesystem":
			if err := r.filesystem(m, f); err != nil {
				return nil, err
			}
		case "network":
			if err := r.network(m, f); err != nil {
				return nil, err
			}
		case "unsafe_macos_seatbelt_rules":
			if r.dropNonoOnly(m.path, f) {
				continue
			}
			if f.SeatbeltRules, err = r.strings(m, checkSeatbelt); err != nil {
				return nil, err
			}
		default:
			if err := r.unknown(m, f); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

type member struct {
	key  string
	path string // dotted key path
	name hujson.Value
	val  hujson.Value
}

type reader struct {
	path string
	src  []byte
	kind Kind
}

func (r *reader) errAt(v hujson.Value, keyPath, format string, args ...any) error {
	line, col := position(r.src, v.StartOffset)
	return &Error{Path: r.path, Line: line, Column: col, KeyPath: keyPath, Message: fmt.Sprintf(format, args...)}
}

func position(src []byte, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	line = 1 + strings.Count(string(src[:off]), "\n")
	col = off - strings.LastIndexByte(string(src[:off]), '\n')
	return line, col
}

// show renders a value for an error message, shortened.
func show(v hujson.Value) string {
	t := hujson.Value{Value: v.Value}
	out := strings.Join(strings.Fields(string(t.Pack())), " ")
	if len(out) > 60 {
		out = out[:57] + "..."
	}
	return out
}

func kindName(v hujson.Value) string {
	switch v.Value.Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a value"
}

func (r *reader) object(v hujson.Value, keyPath string) ([]member, error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		what := "the file"
		if keyPath != "" {
			what = "this key"
		}
		return nil, r.errAt(v, keyPath, "%s must hold a JSON object, got %s %s", what, kindName(v), show(v))
	}
	seen := map[string]bool{}
	out := make([]member, 0, len(obj.Members))
	for _, m := range obj.Members {
		name := m.Name.Value.(hujson.Literal).String()
		p := name
		if keyPath != "" {
			p = keyPath + "." + name
		}
		if seen[name] {
			return nil, r.errAt(m.Name, p, "duplicate key; each key may appear once")
		}
		seen[name] = true
		out = append(out, member{key: name, path: p, name: m.Name, val: m.Value})
	}
	return out, nil
}

func (r *reader) boolean(m member) (bool, error) {
	switch m.val.Value.Kind() {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	}
	return false, r.errAt(m.val, m.path, "want true or false, got %s", show(m.val))
}

func (r *reader) str(v hujson.Value, keyPath string) (string, error) {
	if v.Value.Kind() != '"' {
		return "", r.errAt(v, keyPath, "want a string, got %s %s", kindName(v), show(v))
	}
	return literalString(v.Value.(hujson.Literal)), nil
}

// literalString is the string a JSON string literal stands for: the bytes
// between the quotes when there is no escape and they are valid UTF-8
// (a folder file's paths, a thousand of them in one file), else what
// hujson's unescaping says.
func literalString(lit hujson.Literal) string {
	if n := len(lit); n >= 2 && lit[0] == '"' && lit[n-1] == '"' {
		body := lit[1 : n-1]
		if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return string(body)
		}
	}
	return lit.String()
}

func (r *reader) array(m member) ([]hujson.Value, error) {
	arr, ok := m.val.Value.(*hujson.Array)
	if !ok {
		return nil, r.errAt(m.val, m.path, "want an array, got %s %s", kindName(m.val), show(m.val))
	}
	return arr.Elements, nil
}

// strings reads an array of strings, checking each with check.
func (r *reader) strings(m member, check func(string) error) ([]string, error) {
	elems, err := r.array(m)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		// The key path is made only for an error (a thousand paths in
		// one file).
		at := func() string { return fmt.Sprintf("%s[%d]", m.path, i) }
		if e.Value.Kind() != '"' {
			_, err := r.str(e, at())
			return nil, err
		}
		s := literalString(e.Value.(hujson.Literal))
		if err := check(s); err != nil {
			return nil, r.errAt(e, at(), "%s", err.Error())
		}
		out = append(out, s)
	}
	return out, nil
}

// ports reads an array of TCP port numbers in [lo, 65535].
func (r *reader) ports(m member, lo int) ([]int, error) {
	elems, err := r.array(m)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(elems))
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", m.path, i)
		if e.Value.Kind() != '0' {
			return nil, r.errAt(e, p, "want a port number, got %s %s", kindName(e), show(e))
		}
		lit := string(e.Value.(hujson.Literal))
		n, err := strconv.ParseFloat(lit, 64)
		if err != nil || n != math.Trunc(n) || n < float64(lo) || n > 65535 {
			return nil, r.errAt(e, p, "want a whole port number from %d to 65535, got %s", lo, lit)
		}
		out = append(out, int(n))
	}
	return out, nil
}

func (r *reader) unknown(m member, f *File) error {
	didYouMean := ""
	if c := Closest(m.path); c != "" {
		didYouMean = fmt.Sprintf(" did you mean %q?", c)
	}
	if r.kind == Sbx {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%s: unsupported key %q ignored;%s sbx.json supports sandbox, filesystem.read/write/allow and network.block/allow_domain", r.path, m.path, didYouMean))
		return nil
	}
	return r.errAt(m.name, m.path, "unknown key (value %s);%s nono.json accepts sandbox, filesystem.{read,write,allow,unix_socket_dir_bind}, network.{block,allow_domain,open_port,listen_port,network_profile} and unsafe_macos_seatbelt_rules", show(m.val), didYouMean)
}

// Keys are the key paths a nono.json accepts, dotted.
var Keys = []string{
	"sandbox", "filesystem", "network", "unsafe_macos_seatbelt_rules",
	"filesystem.read", "filesystem.write", "filesystem.allow", "filesystem.unix_socket_dir_bind",
	"network.block", "network.allow_domain", "network.open_port", "network.listen_port", "network.network_profile",
}

// Closest is the known key path an unknown one (dotted) was probably meant
// to be, or "": a near name in the same object first ("network.allow_domains"
// is "network.allow_domain"), else a near name in another object
// ("allow_domain" at the top is "network.allow_domain").
func Closest(keyPath string) string {
	parent, leaf := "", keyPath
	if i := strings.LastIndexByte(keyPath, '.'); i >= 0 {
		parent, leaf = keyPath[:i], keyPath[i+1:]
	}
	var here, elsewhere []string
	full := map[string]string{}
	for _, k := range Keys {
		kp, kl := "", k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			kp, kl = k[:i], k[i+1:]
		}
		if kp == parent {
			here = append(here, kl)
		} else if _, seen := full[kl]; !seen {
			elsewhere = append(elsewhere, kl)
			full[kl] = k
		}
	}
	if c := suggest.Closest(leaf, here); c != "" {
		if parent == "" {
			return c
		}
		return parent + "." + c
	}
	if k, ok := full[leaf]; ok {
		return k
	}
	if c := suggest.Closest(leaf, elsewhere); c != "" {
		return full[c]
	}
	return ""
}

// dropNonoOnly drops a nono-only key from an sbx.json with the dedicated
// warning and reports whether it did.
func (r *reader) dropNonoOnly(keyPath string, f *File) bool {
	if r.kind != Sbx || !nonoOnly[keyPath] {
		return false
	}
	f.Warnings = append(f.Warnings, fmt.Sprintf("%s: %s is nono-only: the sbx microVM has no equivalent, so it is dropped (it applies only under --sandbox-backend nono)", r.path, keyPath))
	return true
}

func (r *reader) filesystem(m member, f *File) error {
	members, err := r.object(m.val, m.path)
	if err != nil {
		return err
	}
	for _, c := range members {
		var dst *[]string
		switch c.key {
		case "read":
			dst = &f.Filesystem.Read
		case "write":
			dst = &f.Filesystem.Write
		case "allow":
			dst = &f.Filesystem.Allow
		case "unix_socket_dir_bind":
			if r.dropNonoOnly(c.path, f) {
				continue
			}
			dst = &f.Filesystem.UnixSocketDirBind
		default:
			if err := r.unknown(c, f); err != nil {
				return err
			}
			continue
		}
		if *dst, err = r.strings(c, checkPath); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) network(m member, f *File) error {
	members, err := r.object(m.val, m.path)
	if err != nil {
		return err
	}
	n := &f.Network
	for _, c := range members {
		if r.dropNonoOnly(c.path, f) {
			continue
		}
		switch c.key {
		case "block":
			n.Block, err = r.boolean(c)
		case "allow_domain":
			n.AllowList = true
			n.AllowDomain, err = r.strings(c, CheckHost)
		case "open_port":
			n.OpenPort, err = r.ports(c, 0)
		case "listen_port":
			n.ListenPort, err = r.ports(c, 1)
		case "network_profile":
			if c.val.Value.Kind() == 'n' {
				n.NetworkProfile = ""
				continue
			}
			n.NetworkProfile, err = r.str(c.val, c.path)
			if err == nil && !profileName().MatchString(n.NetworkProfile) {
				err = r.errAt(c.val, c.path, "want a network profile name like \"developer\", got %s", show(c.val))
			}
		default:
			err = r.unknown(c, f)
		}
		if err != nil {
			return err
		}
	}
	if n.Block && (n.AllowList || n.NetworkProfile != "") {
		return r.errAt(m.val, m.path, "block is true and an allow list is also given: block denies all traffic, so the allow list could never apply; keep one of them")
	}
	return nil
}

// profileName is compiled on first use: its bounded repetition makes a large
// program, which would cost every start-up a third of a millisecond.
var profileName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
})

// checkPath accepts a grant that is absolute or starts with ~ and is not a
// glob pattern; the grant package applies the full rules later.
func checkPath(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(s, 0):
		return fmt.Errorf("path contains a NUL byte")
	case strings.ContainsAny(s, grant.GlobChars):
		return grant.CheckNoGlob(s)
	case s == "~" || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, "/"):
		return nil
	}
	return fmt.Errorf("%q is relative; write an absolute path or one starting with ~/", s)
}

// hostRe is compiled on first use, off the start-up path of every run.
var hostRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*\.?(:[0-9]{1,5})?$`)
})

// CheckHost accepts a host name as used in an allow list: a DNS name, an
// optional leading "*." wildcard, an IPv4 address, and an optional ":port".
func CheckHost(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("empty host name %q: name a host such as api.example.com (an empty entry never means \"no restriction\"; an empty list allows no host at all)", s)
	}
	if len(s) > 260 || !hostRe().MatchString(s) {
		return fmt.Errorf("want a host name such as api.example.com, *.example.com or host:443, got %q", s)
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if p, _ := strconv.Atoi(s[i+1:]); p < 1 || p > 65535 {
			return fmt.Errorf("port in %q must be from 1 to 65535", s)
		}
	}
	return nil
}

// checkSeatbelt accepts a non-empty, balanced s-expression.
func checkSeatbelt(s string) error {
	t := strings.TrimSpace(s)
	if t == "" || t[0] != '(' {
		return fmt.Errorf("want a Seatbelt rule such as \"(allow mach-register)\", got %q", s)
	}
	depth, inStr := 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return fmt.Errorf("unbalanced parentheses in %q", s)
			}
			if depth == 0 && strings.TrimSpace(t[i+1:]) != "" {
				return fmt.Errorf("one rule per string: text after the closing parenthesis in %q", s)
			}
		}
	}
	if depth != 0 || inStr {
		return fmt.Errorf("unbalanced parentheses or quotes in %q", s)
	}
	if strings.TrimSpace(t[1:len(t)-1]) == "" {
		return fmt.Errorf("empty rule %q", s)
	}
	return nil
}
