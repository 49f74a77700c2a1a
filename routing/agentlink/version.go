package agentlink

import (
	"fmt"
	"strconv"
	"strings"
)

// version is a protocol version, major.minor.patch.
type version struct{ major, minor, patch int }

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

// parseVersion parses "major.minor.patch", each a decimal number without sign or leading
// zeros, as semantic versioning writes them.
func parseVersion(s string) (version, error) {
	parts := strings.Split(s, ".")
	if len(s) > 32 || len(parts) != 3 {
		return version{}, fmt.Errorf("version %q is not major.minor.patch", clipText(s, 32))
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || !allDigits(p) || (len(p) > 1 && p[0] == '0') {
			return version{}, fmt.Errorf("version %q is not major.minor.patch", clipText(s, 32))
		}
		n[i] = v
	}
	return version{n[0], n[1], n[2]}, nil
}

// negotiate returns the version a connection speaks: of the versions the agent offers,
// the highest whose major and minor equal one the gateway speaks (a patch is a
// clarification, never a change of the wire), reported as the gateway's version. It fails
// when the lists do not meet, or the agent offers a version that does not parse; the
// reason names both lists. There is no downgrade beyond what the agent itself lists.
func negotiate(gateway, agent []string) (string, error) {
	best, found := version{}, false
	var chosen string
	for _, a := range agent {
		av, err := parseVersion(a)
		if err != nil {
			return "", fmt.Errorf("%w; the gateway speaks %s", err, strings.Join(gateway, ", "))
		}
		for _, g := range gateway {
			gv, err := parseVersion(g)
			if err != nil || gv.major != av.major || gv.minor != av.minor {
				continue
			}
			if !found || av.major > best.major || (av.major == best.major && av.minor > best.minor) {
				best, chosen, found = av, g, true
			}
		}
	}
	if !found {
		offered := "none"
		if len(agent) > 0 {
			offered = strings.Join(agent, ", ")
		}
		return "", fmt.Errorf("no common protocol version: the gateway speaks %s, the agent offers %s",
			strings.Join(gateway, ", "), offered)
	}
	return chosen, nil
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
