package agent

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The NixOS module's typed settings options are agent.toml's keys
// (nix/lib.nix agentTomlKeys and agentTomlSbxKeys, which nix/tests check
// against the module's options): the lists must name exactly the toml tags
// of Config and SbxConfig, so that a key added here gets its option there.
func TestNixModuleKeys(t *testing.T) {
	b, err := os.ReadFile("../../nix/lib.nix")
	if errors.Is(err, fs.ErrNotExist) {
		// The Nix builds' filtered source (nix/package.nix) has no nix/.
		t.Skip("nix/lib.nix is not in this source tree (a Nix build's filtered source); the checkout's go test runs this")
	}
	if err != nil {
		t.Fatal(err)
	}
	list := func(name string) []string {
		m := regexp.MustCompile(`(?s)\b` + name + ` = \[(.*?)\];`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("nix/lib.nix has no list %s", name)
		}
		var out []string
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
			out = append(out, string(q[1]))
		}
		slices.Sort(out)
		return out
	}
	tags := func(v any) []string {
		var out []string
		ty := reflect.TypeOf(v)
		for i := 0; i < ty.NumField(); i++ {
			if tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
				out = append(out, tag)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := list("agentTomlKeys"), tags(Config{}); !slices.Equal(got, want) {
		t.Errorf("nix/lib.nix agentTomlKeys = %q; Config's keys are %q", got, want)
	}
	if got, want := list("agentTomlSbxKeys"), tags(SbxConfig{}); !slices.Equal(got, want) {
		t.Errorf("nix/lib.nix agentTomlSbxKeys = %q; SbxConfig's keys are %q", got, want)
	}
}
