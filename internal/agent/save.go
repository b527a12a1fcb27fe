package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/agent-sandbox/agent-sandbox/internal/atomicfile"
)

// SaveAllow adds entry (a host the caller checked) to network.allow_domain
// of the folder dir's sandbox/nono.json (agent-sandbox allow --save) and
// returns the file's path; added is false when the list had it already.
// A folder without nono.json is refused (the file opts the folder into the
// sandbox: that is the user's decision), and so is one whose network is
// blocked (network.block) or has no allow list (open).
func SaveAllow(dir, entry string) (path string, added bool, err error) {
	path = filepath.Join(dir, "sandbox", "nono.json")
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, false, fmt.Errorf("%s does not exist: the file opts the folder into the sandbox, so agent-sandbox does not create it; add {\"network\": {\"allow_domain\": [%q]}} yourself", path, entry)
	}
	if err != nil {
		return path, false, err
	}
	if !fi.Mode().IsRegular() {
		return path, false, fmt.Errorf("%s is not a regular file: edit it yourself", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return path, false, err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return path, false, fmt.Errorf("%s: %v: edit it yourself", path, err)
	}
	nw, _ := doc["network"].(map[string]any)
	if nw == nil {
		return path, false, fmt.Errorf("%s has no network.allow_domain list (its network is open or blocked): add the entry yourself if that is what you mean", path)
	}
	if block, _ := nw["block"].(bool); block {
		return path, false, fmt.Errorf("%s: network.block is true: an allow entry there would contradict it; edit the file yourself", path)
	}
	raw, ok := nw["allow_domain"].([]any)
	if !ok {
		return path, false, fmt.Errorf("%s has no network.allow_domain list: add the entry yourself", path)
	}
	if slices.Contains(raw, any(entry)) {
		return path, false, nil
	}
	nw["allow_domain"] = append(raw, entry)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return path, false, err
	}
	if err := atomicfile.Write(path, append(out, '\n'), fi.Mode().Perm()); err != nil {
		return path, false, err
	}
	return path, true, nil
}
