package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"napwake.dev/operator/internal/tools/forecastsim/kinds"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoal replays seed 1 of the office kind and of napwake-devhours-v1
// scored on weeks 5-8, as docs/bench/forecast.md reports (the page runs
// three seeds of every kind): every goal is met, G1 on office hours.
func TestGoal(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the goal run takes about 15 s without the race detector; skipped with -short and -race")
	}
	for _, kind := range []string{officeKind, devhoursKind} {
		g, err := goalRun(kind, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(goalLine(kind, "1", g))
		for _, m := range g.Misses(kind == officeKind) {
			t.Errorf("%s: goal %s missed: %s", kind, m.Goal, m.Text)
		}
	}
}

// TestGoalsFailWhenMissed: a forecast that cuts nothing for more awake
// time misses G1, G2 and G4, and a broken guard misses G3.
func TestGoalsFailWhenMissed(t *testing.T) {
	base := Counts{ColdStartsPerson: 100, AwakeMinutes: 1000}
	g := Goal{IdleOnly: base, Forecast: Counts{ColdStartsPerson: 100, AwakeMinutes: 1300, ForecastWakes: 10, ForecastWakesUsed: 1},
		PauseEarly: Counts{ColdStartsPerson: 110, AwakeMinutes: 1250},
		Sweep:      []Counts{{ColdStartsPerson: 80, AwakeMinutes: 1200}, {ColdStartsPerson: 60, AwakeMinutes: 1400}},
		Guards:     []string{"a: an early pause with pauseEarly off or wake mode Ask"}}
	var got []string
	for _, m := range g.Misses(true) {
		got = append(got, m.Goal)
	}
	want := []string{"cut", "awake", "price", "precision", "vsIdleAfter", "guards", "pauseEarly"}
	if !slices.Equal(got, want) {
		t.Errorf("misses %v, want %v", got, want)
	}
	// At +30 % awake the sweep, interpolated, cuts 30 %.
	if c := g.SweepCut(); c < 0.2999 || c > 0.3001 {
		t.Errorf("the sweep's cut at +30 %% awake is %.4f, want 0.30", c)
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

// TestKindGolden replays a small trace of each kind (seed 1, 10
// environments, 4 weeks, scored from week 2) and compares the report and
// the wakes with testdata: a change to a kind's generator or to the
// forecast shows here, to be explained in its commit.
func TestKindGolden(t *testing.T) {
	for _, kind := range kinds.Names {
		t.Run(kind, func(t *testing.T) {
			g, err := kinds.Generate(kind, 1, 10, 4)
			if err != nil {
				t.Fatal(err)
			}
			rep, wakes, err := Replay(fromDevhours(g), 2)
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var w bytes.Buffer
			if err := writeWakes(&w, wakes); err != nil {
				t.Fatal(err)
			}
			golden(t, "golden-"+kind+"-seed1.json", append(js, '\n'))
			golden(t, "golden-"+kind+"-seed1-wakes.csv", w.Bytes())
		})
	}
}
