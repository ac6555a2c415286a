package soak

import (
	"fmt"
	"sort"
	"strings"
)

// Bounds are what a soak must stay within.
type Bounds struct {
	// RSSDrift is the largest growth of resident memory from baseline to
	// end, as a fraction (the issue: 0.10).
	RSSDrift float64
	// Goroutines and FDs are how many more than at baseline may be left at
	// the end.
	Goroutines, FDs float64
}

// DefaultBounds are the issue's: RSS growth under 10 %; goroutines within
// 5 and descriptors within 3 of baseline. A quiet process's counts move by
// a few (a client-go watch re-opened, an HTTP/2 stream to the API server, a
// lingering port), while a leak per held connection or per cycle leaves
// tens after a few cycles (each cycle holds one connection per caller,
// goroutine and descriptor each).
var DefaultBounds = Bounds{RSSDrift: 0.10, Goroutines: 5, FDs: 3}

// Process is one process's samples at baseline and at the end.
type Process struct {
	Name          string
	Baseline, End Values
	// Tables lists the series whose end value must not exceed baseline
	// (the doorman's table entries); empty for a process exporting none.
	Tables []string
}

// Finding is one check of one process.
type Finding struct {
	Process, Check string
	Baseline, End  float64
	OK             bool
}

func (f Finding) String() string {
	verdict := "ok"
	if !f.OK {
		verdict = "MISS"
	}
	return fmt.Sprintf("%-4s %s %s: baseline %s, end %s", verdict, f.Process, f.Check, human(f.Check, f.Baseline), human(f.Check, f.End))
}

// Judge checks each process against b; every finding is returned, misses
// with OK false.
func Judge(b Bounds, procs []Process) []Finding {
	var out []Finding
	for _, p := range procs {
		rb, re := p.Baseline[RSS], p.End[RSS]
		out = append(out,
			Finding{p.Name, fmt.Sprintf("RSS (growth < %.0f %%)", b.RSSDrift*100), rb, re, rb > 0 && re <= rb*(1+b.RSSDrift)},
			within(p, Goroutines, fmt.Sprintf("goroutines (≤ baseline + %.0f)", b.Goroutines), b.Goroutines),
			within(p, FDs, fmt.Sprintf("open fds (≤ baseline + %.0f)", b.FDs), b.FDs))
		tables := append([]string(nil), p.Tables...)
		sort.Strings(tables)
		for _, t := range tables {
			out = append(out, within(p, t, t+" (≤ baseline)", 0))
		}
	}
	return out
}

func within(p Process, series, check string, slack float64) Finding {
	_, inB := p.Baseline[series]
	_, inE := p.End[series]
	base, end := p.Baseline[series], p.End[series]
	return Finding{p.Name, check, base, end, inB && inE && end <= base+slack}
}

// Passed is true when every finding is OK.
func Passed(fs []Finding) bool {
	for _, f := range fs {
		if !f.OK {
			return false
		}
	}
	return len(fs) > 0
}

func human(check string, x float64) string {
	if strings.HasPrefix(check, "RSS") {
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	}
	return fmt.Sprintf("%.0f", x)
}
