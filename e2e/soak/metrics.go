package soak

import (
	"bufio"
	"sort"
	"strconv"
	"strings"
)

// Series the driver samples from every process's /metrics.
const (
	RSS        = "process_resident_memory_bytes"
	Goroutines = "go_goroutines"
	FDs        = "process_open_fds"
	// TableEntries is the doorman's napwake_doorman_table_entries{table}.
	TableEntries = "napwake_doorman_table_entries"
	// RouteMoves is the operator's napwake_operator_route_moves_total.
	RouteMoves = "napwake_operator_route_moves_total"
	// What the Go runtime says of its heap: spans in use, and the idle
	// spans it has (Idle) and has given back to the kernel (Released);
	// Idle − Released is freed memory it still holds, counted in RSS.
	HeapInuse    = "go_memstats_heap_inuse_bytes"
	HeapIdle     = "go_memstats_heap_idle_bytes"
	HeapReleased = "go_memstats_heap_released_bytes"
	// RSSAnon and RSSFile are not from /metrics: the kernel's split of the
	// resident set (/proc/PID/status RssAnon, RssFile) into memory the
	// process allocated and pages of files it maps (its own binary's text,
	// faulted in as code paths are first run).
	RSSAnon = "rss_anon_bytes"
	RSSFile = "rss_file_bytes"
)

// Values maps a series name to its value; a labelled series is keyed by
// its name and its labels as exposed, such as
// napwake_doorman_table_entries{table="listeners"}.
type Values map[string]float64

// Sum adds every series of name, labelled or not.
func (v Values) Sum(name string) float64 {
	total := 0.0
	for k, x := range v {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += x
		}
	}
	return total
}

// ParseMetrics reads the samples of the wanted names from a Prometheus text
// exposition. Comments, other names, timestamps and lines it cannot read
// are skipped: a scrape it does not understand gives fewer values, never an
// error or a panic.
func ParseMetrics(text string, wanted ...string) Values {
	want := make(map[string]bool, len(wanted))
	for _, w := range wanted {
		want[w] = true
	}
	v := Values{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, rest, ok := splitSeries(line)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(key, "{")
		if !want[name] {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		x, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		v[key] = x
	}
	return v
}

// splitSeries splits a sample line into its series (name and labels) and
// the rest (value, maybe a timestamp). Label values may hold spaces and
// braces inside quotes.
func splitSeries(line string) (key, rest string, ok bool) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", "", false
	}
	if line[i] != '{' {
		return line[:i], line[i:], true
	}
	quoted, escaped := false, false
	for j := i + 1; j < len(line); j++ {
		c := line[j]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == '}' && !quoted:
			return line[:j+1], line[j+1:], true
		}
	}
	return "", "", false
}

// Median is, series by series, the median of several samples of one
// process (the lower middle of an even count): a quiet period is sampled a
// few times so that one garbage collection does not decide the verdict. A
// series missing from any sample is left out.
func Median(samples []Values) Values {
	out := Values{}
	if len(samples) == 0 {
		return out
	}
	for k := range samples[0] {
		xs := make([]float64, 0, len(samples))
		for _, s := range samples {
			if x, ok := s[k]; ok {
				xs = append(xs, x)
			}
		}
		if len(xs) != len(samples) {
			continue
		}
		sort.Float64s(xs)
		out[k] = xs[(len(xs)-1)/2]
	}
	return out
}
