package view

import (
	"reflect"
	"strings"
	"testing"
)

// fill sets every field reachable from v (structs, slices of two
// elements, strings, numbers, flags) to a value that is not zero.
func fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue // set inside its package, never sent
			}
			fill(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), path+"[]")
		}
	case reflect.String:
		v.SetString("/x" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Uint16, reflect.Uint64:
		v.SetUint(uint64(len(path)) + 1000)
	default:
		panic("fill: a field of kind " + v.Kind().String() + " at " + path + ": teach fill and the codec about it")
	}
}

// Every field of a Config (and of the landlock.Policy and Mounts in it)
// survives the init's encoding: a field the codec forgets fails here.
func TestCodecCoversConfig(t *testing.T) {
	var c Config
	fill(reflect.ValueOf(&c).Elem(), "Config")
	got, err := DecodeConfig(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip lost fields:\n got %+v\nwant %+v", got, c)
	}
	if got, err := DecodeConfig(Config{}.Encode()); err != nil || !reflect.DeepEqual(got, Config{}) {
		t.Errorf("the empty Config: %+v, %v", got, err)
	}
}

// Anything but a whole encoded Config is refused with an error.
func TestCodecRefuses(t *testing.T) {
	var c Config
	fill(reflect.ValueOf(&c).Elem(), "Config")
	b := c.Encode()
	for _, bad := range [][]byte{nil, []byte("{}"), b[:len(b)-1], append(append([]byte{}, b...), 0), []byte(codecMagic + "\xff\xff\xff\xff\x0f")} {
		if _, err := DecodeConfig(bad); err == nil {
			t.Errorf("DecodeConfig(%q...) succeeded", bad[:min(len(bad), 16)])
		} else if !strings.Contains(err.Error(), "view configuration") {
			t.Errorf("error does not say what it read: %v", err)
		}
	}
}

// FuzzDecodeConfig: no input makes the decoder panic or allocate beyond
// its input, and what it accepts encodes back to something it reads the
// same way.
func FuzzDecodeConfig(f *testing.F) {
	var c Config
	fill(reflect.ValueOf(&c).Elem(), "Config")
	f.Add(c.Encode())
	f.Add(Config{}.Encode())
	f.Add([]byte(codecMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConfig(b)
		if err != nil {
			return
		}
		again, err := DecodeConfig(c.Encode())
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("re-encoding changed %+v into %+v (%v)", c, again, err)
		}
	})
}
