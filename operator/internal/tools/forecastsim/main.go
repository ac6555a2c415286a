// Command forecastsim replays a trace of environments and their people's and
// robots' events under each wake policy (idle-only, a fixed schedule, the
// forecast observing, acting, and acting with pauseEarly) and prints one
// JSON object of cold starts people saw, awake minutes, forecast wakes and
// early pauses, keyed by policy (docs/bench/forecast.md#method). It calls the same forecast and
// schedule packages the operator does, so it measures the code that runs.
//
//	forecastsim -envs environments.csv -events events.csv [-score-from-week N] [-wakes wakes.csv]
//	forecastsim gen -seed 1 -dir out/ [-kind office]  (the napwake-devhours-v1 trace, or a kind's)
//	forecastsim goal -seeds 1-3 [-kinds office,…]     (the goal table of docs/bench/forecast.md#results, in Markdown)
//
// Beside the five policies it replays a sweep of fixed longer idleAfter
// (idle-45m to idle-4h) with no forecast, so a forecast's cut can be
// compared with what a longer idleAfter buys for the same awake time.
//
// An environment whose auto_resume (pause_early) column is false stays on the
// idle rules in the policies that would pre-wake and hold (pause early), as
// its spec would have it; its forecast still learns. -wakes writes the wakes
// of the "forecast" policy, scored or not.
//
// It is a benchmark tool: it reads and writes local files and stdout, and
// touches no cluster and no network.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "forecastsim:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "gen":
			return runGen(args[1:])
		case "goal":
			return runGoal(args[1:], out)
		}
	}
	fs := flag.NewFlagSet("forecastsim", flag.ContinueOnError)
	envs := fs.String("envs", "", "environments.csv (or .csv.gz)")
	events := fs.String("events", "", "events.csv (or .csv.gz)")
	week := fs.Int("score-from-week", 1, "score only from this week on; week 1 starts on the Monday 00:00 UTC on or before the first event")
	wakesPath := fs.String("wakes", "", "also write every forecast wake of the forecast policy here as environment,time")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if *envs == "" || *events == "" {
		return errors.New("give the trace: -envs environments.csv -events events.csv")
	}
	tr, err := ReadTrace(*envs, *events)
	if err != nil {
		return err
	}
	rep, wakes, err := Replay(tr, *week)
	if err != nil {
		return err
	}
	if *wakesPath != "" {
		f, err := os.Create(*wakesPath)
		if err != nil {
			return fmt.Errorf("creating wakes file: %w", err)
		}
		if err := writeWakes(f, wakes); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("closing wakes file: %w", err)
		}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
