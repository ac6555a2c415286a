// Command timings prints the table `make test` ends with: each step's time,
// then the slowest unit/envtest tests (from gotestsum's --jsonfile, Go's
// test2json events) and the slowest end-to-end specs (from ginkgo's
// --json-report). A file that is missing (a step that did not run) is
// left out, never an error.
//
//	go run ./timings -steps _out/steps.tsv -unit _out/unit.json -e2e _out/e2e-report.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	steps := flag.String("steps", "", "tab-separated step, seconds, result lines (hack/test.sh writes them)")
	unit := flag.String("unit", "", "gotestsum --jsonfile output")
	e2e := flag.String("e2e", "", "ginkgo --json-report output")
	n := flag.Int("n", 10, "how many of the slowest tests and specs to list")
	flag.Parse()
	if err := run(os.Stdout, *steps, *unit, *e2e, *n); err != nil {
		fmt.Fprintln(os.Stderr, "timings:", err)
		os.Exit(1)
	}
}

// timed is one named thing and how long it took.
type timed struct {
	name string
	took time.Duration
	note string
}

func run(w io.Writer, steps, unit, e2e string, n int) error {
	fmt.Fprintln(w, "\n== make test: where the time went")
	if err := section(w, "steps", steps, readSteps, 0); err != nil {
		return err
	}
	if err := section(w, "slowest unit and envtest tests", unit, readUnit, n); err != nil {
		return err
	}
	return section(w, "slowest end-to-end specs", e2e, readE2E, n)
}

func section(w io.Writer, title, path string, read func(io.Reader) ([]timed, error), n int) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n > 0 {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].took > rows[j].took })
		if len(rows) > n {
			rows = rows[:n]
		}
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for _, r := range rows {
		fmt.Fprintf(w, "  %9s  %s%s\n", clock(r.took), r.name, r.note)
	}
	return nil
}

// clock writes d as m:ss, or as seconds under a minute.
func clock(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// readSteps reads hack/test.sh's lines: step, seconds, ok|FAILED.
func readSteps(r io.Reader) ([]timed, error) {
	var rows []timed
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 2 {
			continue
		}
		secs, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("step %q: seconds %q: %w", f[0], f[1], err)
		}
		row := timed{name: f[0], took: time.Duration(secs) * time.Second}
		if len(f) > 2 && f[2] != "ok" {
			row.note = "  (" + f[2] + ")"
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

// testEvent is the part of a test2json event read here.
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// readUnit lists every finished test (subtests left out: their parent
// holds their time), the last run of a test that ran twice winning.
func readUnit(r io.Reader) ([]timed, error) {
	last := map[string]timed{}
	dec := json.NewDecoder(r)
	for {
		var ev testEvent
		err := dec.Decode(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev.Test == "" || strings.Contains(ev.Test, "/") || (ev.Action != "pass" && ev.Action != "fail") {
			continue
		}
		key := ev.Package + "." + ev.Test
		row := timed{name: key, took: time.Duration(ev.Elapsed * float64(time.Second))}
		if ev.Action == "fail" {
			row.note = "  (failed)"
		}
		last[key] = row
	}
	rows := make([]timed, 0, len(last))
	for _, r := range last {
		rows = append(rows, r)
	}
	return rows, nil
}

// suiteReport is the part of ginkgo's JSON report read here.
type suiteReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeText            string
		LeafNodeType            string
		State                   string
		RunTime                 time.Duration
		NumAttempts             int
		ParallelProcess         int
	}
}

func readE2E(r io.Reader) ([]timed, error) {
	var suites []suiteReport
	if err := json.NewDecoder(r).Decode(&suites); err != nil {
		return nil, err
	}
	var rows []timed
	for _, s := range suites {
		for _, sp := range s.SpecReports {
			if sp.LeafNodeType != "It" || sp.State == "skipped" || sp.State == "pending" {
				continue // a focused run lists every spec it did not run
			}
			name := strings.Join(append(append([]string{}, sp.ContainerHierarchyTexts...), sp.LeafNodeText), " ")
			note := ""
			if sp.State != "passed" {
				note = "  (" + sp.State + ")"
			}
			if sp.NumAttempts > 1 {
				note += fmt.Sprintf("  (%d attempts)", sp.NumAttempts)
			}
			rows = append(rows, timed{name: name, took: sp.RunTime, note: note})
		}
	}
	return rows, nil
}
