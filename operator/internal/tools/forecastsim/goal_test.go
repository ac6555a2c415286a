package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// knownMisses are the goals the forecast does not meet on
// napwake-devhours-v1 (docs/bench/forecast.md says by how much). The test
// fails when one of them is met (take it off and update the page) and when
// any other is missed.
var knownMisses = []string{"cut", "awake", "price", "precision"}

// TestGoal replays seeds 1-5 of napwake-devhours-v1 (200 environments, 8
// weeks) scored on weeks 5-8, as docs/bench/forecast.md reports.
func TestGoal(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the goal run takes about 10 s without the race detector; skipped with -short and -race")
	}
	var total Goal
	for seed := uint64(1); seed <= 5; seed++ {
		g, err := goalRun(seed)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(goalLine(strconv.FormatUint(seed, 10), g))
		total.Add(g)
	}
	t.Log(goalLine("total", total))
	missed := map[string]string{}
	for _, m := range total.Misses() {
		missed[m.Goal] = m.Text
	}
	for _, goal := range []string{"cut", "awake", "price", "precision", "stale", "pauseEarly"} {
		text, miss := missed[goal]
		switch known := slices.Contains(knownMisses, goal); {
		case miss && !known:
			t.Errorf("goal %s missed: %s", goal, text)
		case !miss && known:
			t.Errorf("goal %s is met now: take it off knownMisses and update docs/bench/forecast.md", goal)
		case miss:
			t.Logf("known miss: %s", text)
		}
	}
}

// TestGolden replays small napwake-devhours-v1 traces of fixed seeds through
// the command, from gzipped CSV, and compares the report and the wakes with
// testdata. The trace's own digest is compared too: napwake-devhours-v1
// must not change (a changed generator is a new version).
func TestGolden(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run("seed "+strconv.FormatUint(seed, 10), func(t *testing.T) {
			g := small(seed)
			dir := t.TempDir()
			if err := writeTrace(g, dir, true); err != nil {
				t.Fatal(err)
			}
			var plain bytes.Buffer
			if err := g.WriteCSV(&bytes.Buffer{}, &plain); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(plain.Bytes())
			wakes := filepath.Join(dir, "wakes.csv")
			var out bytes.Buffer
			err := run([]string{"-envs", filepath.Join(dir, "environments.csv.gz"), "-events", filepath.Join(dir, "events.csv.gz"), "-score-from-week", "2", "-wakes", wakes}, &out)
			if err != nil {
				t.Fatal(err)
			}
			w, err := os.ReadFile(wakes)
			if err != nil {
				t.Fatal(err)
			}
			name := "golden-seed" + strconv.FormatUint(seed, 10)
			golden(t, name+".json", out.Bytes())
			golden(t, name+"-wakes.csv", w)
			golden(t, name+"-events.sha256", []byte(hex.EncodeToString(sum[:])+"\n"))

			direct, _, err := Replay(fromDevhours(g), 2)
			if err != nil {
				t.Fatal(err)
			}
			var fromCSV Report
			if err := jsonUnmarshal(out.Bytes(), &fromCSV); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(direct, fromCSV) {
				t.Error("replaying the generated trace directly and through its CSV files differ")
			}
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (a deliberate change: go test -update, and say why in the commit):\n%s", name, firstDiff(string(got), string(want)))
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  got  " + g[i] + "\n  want " + w[i]
		}
	}
	return "lengths differ"
}
