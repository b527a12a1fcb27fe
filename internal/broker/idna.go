package broker

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// toASCIIName converts a host name to the form the allow list compares:
// lower case, no trailing dot, each non-ASCII label NFKC-normalised and
// Punycode-encoded with the "xn--" prefix (the IDNA lookup form clients put
// on the wire). It applies a subset of the UTS #46 mapping (NFKC and lower
// case, no case folding, so "ß" stays "ß" as in nontransitional
// processing): a Unicode spelling that UTS #46 would map further simply does
// not match (refused), it is never admitted by mistake, because the result
// is always compared as ASCII against entries converted the same way.
// Checked against golang.org/x/net/idna's Lookup profile by fuzzing: no
// difference found where both accept a name.
func toASCIIName(s string) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", errors.New("empty name")
	}
	if !utf8.ValidString(s) {
		return "", errors.New("name is not valid UTF-8")
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		s = strings.ToLower(s)
	} else {
		s = norm.NFKC.String(strings.ToLower(norm.NFKC.String(s)))
		// Ideographic and fullwidth full stops are label separators in IDNA.
		s = strings.NewReplacer("\u3002", ".", "\uff0e", ".", "\uff61", ".").Replace(s)
		s = strings.TrimSuffix(s, ".")
	}
	if len(s) > 253*4 {
		return "", errors.New("name too long")
	}
	labels := strings.Split(s, ".")
	for i, l := range labels {
		if l == "" {
			return "", errors.New("empty label")
		}
		if isASCII(l) {
			continue
		}
		for _, r := range l {
			if unicode.IsControl(r) || unicode.IsSpace(r) || r == '*' {
				return "", errors.New("invalid character in name")
			}
		}
		enc, err := punycodeEncode(l)
		if err != nil {
			return "", err
		}
		labels[i] = "xn--" + enc
	}
	out := strings.Join(labels, ".")
	if err := checkLDH(out); err != nil {
		return "", err
	}
	return out, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// checkLDH accepts ASCII names of letters, digits, '-' and '_' in labels of
// 1 to 63 bytes, 253 bytes in all, with no label starting or ending in '-'.
// The underscore is accepted because real service names use it.
func checkLDH(s string) error {
	if len(s) > 253 {
		return errors.New("name longer than 253 bytes")
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" {
			return errors.New("empty label")
		}
		if len(l) > 63 {
			return errors.New("label longer than 63 bytes")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return errors.New("label starts or ends with '-'")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return errors.New("invalid character in name (letters, digits, '-', '_' and '.' only)")
			}
		}
	}
	return nil
}

// Punycode parameters from RFC 3492 section 5.
const (
	pcBase        = 36
	pcTMin        = 1
	pcTMax        = 26
	pcSkew        = 38
	pcDamp        = 700
	pcInitialBias = 72
	pcInitialN    = 128
)

func pcAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= pcDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((pcBase-pcTMin)*pcTMax)/2 {
		delta /= pcBase - pcTMin
		k += pcBase
	}
	return k + (pcBase-pcTMin+1)*delta/(delta+pcSkew)
}

func pcDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}

// punycodeEncode encodes one label with the Bootstring algorithm of
// RFC 3492 (section 6.3), written from the RFC.
func punycodeEncode(label string) (string, error) {
	runes := []rune(label)
	var out []byte
	for _, r := range runes {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	h := b
	if b > 0 {
		out = append(out, '-')
	}
	n, delta, bias := pcInitialN, 0, pcInitialBias
	for h < len(runes) {
		m := int(unicode.MaxRune) + 1
		for _, r := range runes {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if (m - n) > (1<<30)/(h+1) {
			return "", errors.New("label too long to encode")
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range runes {
			if int(r) < n {
				delta++
			}
			if int(r) == n {
				q := delta
				for k := pcBase; ; k += pcBase {
					t := k - bias
					if t < pcTMin {
						t = pcTMin
					} else if t > pcTMax {
						t = pcTMax
					}
					if q < t {
						break
					}
					out = append(out, pcDigit(t+(q-t)%(pcBase-t)))
					q = (q - t) / (pcBase - t)
				}
				out = append(out, pcDigit(q))
				bias = pcAdapt(delta, h+1, h == b)
				delta = 0
				h++
			}
		}
		delta++
		n++
	}
	return string(out), nil
}
