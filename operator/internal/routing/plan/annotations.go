package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// IgnorePorts is a parsed napwake.dev/doorman-ignore-ports value: Service
// port names and numbers the doorman never takes.
type IgnorePorts struct {
	names   map[string]bool
	numbers map[int32]bool
}

// maxIgnoreEntries bounds what one annotation may list: a Service has at most
// a few hundred ports, so anything longer is not a list of them.
const maxIgnoreEntries = 1024

// ParseIgnorePorts reads a comma-separated list of port names and numbers,
// such as "metrics,9090". Blank entries and spaces are skipped. An entry that
// is neither a valid port number nor a plausible port name is an error; the
// entries read so far still apply, so a typo never routes a port the user
// meant to keep away from the doorman that the rest of the list names.
func ParseIgnorePorts(s string) (IgnorePorts, error) {
	ip := IgnorePorts{names: map[string]bool{}, numbers: map[int32]bool{}}
	var bad []string
	for i, raw := range strings.Split(s, ",") {
		if i >= maxIgnoreEntries {
			bad = append(bad, "more than 1024 entries")
			break
		}
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if n, err := strconv.ParseInt(e, 10, 32); err == nil {
			if n < 1 || n > 65535 {
				bad = append(bad, strconv.Quote(e))
				continue
			}
			ip.numbers[int32(n)] = true
			continue
		}
		if len(e) > 63 || strings.ContainsAny(e, " \t\r\n") {
			bad = append(bad, strconv.Quote(e))
			continue
		}
		ip.names[e] = true
	}
	if len(bad) > 0 {
		return ip, fmt.Errorf("reading doorman-ignore-ports: not a port name or number: %s", strings.Join(bad, ", "))
	}
	return ip, nil
}

// Ignores reports whether the list names the port by name or number.
func (ip IgnorePorts) Ignores(name string, port int32) bool {
	return (name != "" && ip.names[name]) || ip.numbers[port]
}
