package main

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napwake.dev/operator/internal/tools/forecastsim/devhours"
	"napwake.dev/operator/internal/tools/forecastsim/kinds"
)

// runGen writes a napwake-devhours-v1 trace, or with -kind one of the
// kinds' (docs/bench/forecast.md#trace-kinds): environments.csv and
// events.csv (gzipped with -gzip) into -dir.
func runGen(args []string) error {
	fs := flag.NewFlagSet("forecastsim gen", flag.ContinueOnError)
	seed := fs.Uint64("seed", 1, "the trace's seed")
	envs := fs.Int("envs", 200, "environments")
	weeks := fs.Int("weeks", 8, "weeks")
	dir := fs.String("dir", "", "directory to write environments.csv and events.csv into")
	gz := fs.Bool("gzip", false, "write environments.csv.gz and events.csv.gz")
	kind := fs.String("kind", devhoursKind, "the trace: devhours (napwake-devhours-v1) or a kind: "+strings.Join(kinds.Names, ", "))
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if *dir == "" {
		return errors.New("give -dir to write the trace into")
	}
	if *envs < 1 || *weeks < 1 {
		return errors.New("-envs and -weeks must be at least 1")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", *dir, err)
	}
	if *kind == devhoursKind {
		return writeTrace(devhours.Generate(devhours.Config{Seed: *seed, Envs: *envs, Weeks: *weeks}), *dir, *gz)
	}
	if *weeks < 3 {
		return errors.New("-weeks must be at least 3 for a kind (its holiday week falls in week 3 or later)")
	}
	tr, err := kinds.Generate(*kind, *seed, *envs, *weeks)
	if err != nil {
		return err
	}
	return writeTrace(tr, *dir, *gz)
}

// writeTrace writes tr's two files into dir.
func writeTrace(tr *devhours.Trace, dir string, gz bool) error {
	suffix := ".csv"
	if gz {
		suffix = ".csv.gz"
	}
	envs, err := create(filepath.Join(dir, "environments"+suffix), gz)
	if err != nil {
		return err
	}
	events, err := create(filepath.Join(dir, "events"+suffix), gz)
	if err != nil {
		envs.Close()
		return err
	}
	werr := tr.WriteCSV(envs, events)
	return errors.Join(werr, envs.Close(), events.Close())
}

type gzipFile struct {
	*gzip.Writer
	f *os.File
}

func (g gzipFile) Close() error { return errors.Join(g.Writer.Close(), g.f.Close()) }

func create(path string, gz bool) (io.WriteCloser, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating trace file: %w", err)
	}
	if !gz {
		return f, nil
	}
	return gzipFile{gzip.NewWriter(f), f}, nil
}

// fromDevhours turns a generated trace into the simulator's input without
// the CSV round trip (the golden test checks the two agree).
func fromDevhours(g *devhours.Trace) *Trace {
	tr := &Trace{}
	byName := map[string]*Env{}
	for _, e := range g.Envs {
		loc, err := time.LoadLocation(e.Zone)
		if err != nil {
			panic(err) // the generator's zones are constants
		}
		env := &Env{Name: e.Name, Loc: loc, Resume: time.Duration(e.ResumeSeconds) * time.Second, IdleAfter: e.IdleAfter,
			Ask: e.WakeMode == "Ask", AutoResume: e.AutoResume, PauseEarly: e.PauseEarly}
		byName[e.Name] = env
		tr.Envs = append(tr.Envs, env)
	}
	for _, ev := range g.Events {
		if ev.Robot {
			byName[ev.Env].Robots++
		} else {
			byName[ev.Env].Persons = append(byName[ev.Env].Persons, ev.Time)
		}
	}
	tr.First, tr.Last = g.Events[0].Time, g.Events[len(g.Events)-1].Time
	return tr
}
